"""`ragsweep best | report | gate | effects` as a user runs them, in subprocesses, on a real sweep over two datasets.

The project (a scratch copy of sweep.py, conf/ and sweeps/, as in tests/test_loop.py) ran one job on
a tiny dataset of its own, then the `quick` grid on sotu_qa, so sotu_qa holds the newest run.
`BAD_INPUT` is the table of refused commands: each exits 2 with one line and writes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.preloaded import run_command

ROOT = Path(__file__).resolve().parents[2]
RAGSWEEP = Path(sys.executable).with_name("ragsweep")  # the installed console script
ARTIFACTS = ROOT / "test-artifacts"  # a report kept for a look after the run
TINY_DOCS = {"apples": "Apples grow on trees. Most apples are red or green.",
             "rivers": "Rivers carry water to the sea. The Nile is a long river."}
TINY_QUESTIONS = [("t1", "What colour are apples?", "apples", "Most apples are red or green."),
                  ("t2", "Where do rivers go?", "rivers", "Rivers carry water to the sea."),
                  ("t3", "Which river is long?", "rivers", "The Nile is a long river.")]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}  # entry points set them


def _run(project: Path, *args: str) -> subprocess.CompletedProcess:
    return run_command(list(args), project, _env())


def _ragsweep(project: Path, *args: str) -> subprocess.CompletedProcess:
    return _run(project, str(RAGSWEEP), *args)


def _jobs(project: Path):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{project}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"], order_by=["attributes.start_time DESC"])
    return runs[runs["tags.ragsweep.role"] == "job"].reset_index(drop=True)


def _tiny_dataset(folder: Path) -> Path:
    (folder / "documents").mkdir(parents=True)
    for name, text in TINY_DOCS.items():
        (folder / "documents" / f"{name}.txt").write_text(text)
    write_questions(folder, TINY_DOCS, TINY_QUESTIONS)
    return folder


def write_questions(folder: Path, docs: dict[str, str], questions: list[tuple[str, str, str, str]]) -> None:
    """`folder/queries.jsonl`: each (id, question, doc, quoted content) with its span found in `docs[doc]`."""
    lines = []
    for qid, question, doc, content in questions:
        start = docs[doc].index(content)
        references = [{"doc_id": doc, "start": start, "end": start + len(content), "content": content}]
        lines.append(json.dumps({"id": qid, "question": question, "references": references}))
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def project(tmp_path_factory, scratch_project) -> Path:
    """A scratch project with one job on the dataset `tiny`, then the quick grid on sotu_qa, and an export `base`."""
    folder = scratch_project(tmp_path_factory.mktemp("project"))
    tiny = _tiny_dataset(folder / "data" / "tiny")
    for args in (["-m", "dataset=native", f"dataset.path={tiny}", "chunker.size=8", "k=1"],
                 ["-m", "+sweep=quick"]):
        result = _run(folder, sys.executable, "sweep.py", *args)
        assert result.returncode == 0, result.stderr[-3000:]
    exported = _ragsweep(folder, "best", "--name", "base")
    assert exported.returncode == 0, exported.stderr[-3000:]
    return folder


def test_jobs_log_their_group_choices_and_label_and_the_fingerprint_ignores_them(project):
    from hydra import compose, initialize_config_dir

    from ragsweep.runner.plan import plan_job

    jobs = _jobs(project)
    quick = jobs[jobs["tags.dataset.name"] == "sotu_qa"].set_index("tags.mlflow.runName")
    assert sorted(quick.index) == ["chunker=fixed,k=3", "chunker=fixed,k=5", "chunker=recursive,k=3",
                                   "chunker=recursive,k=5"]
    assert (quick["tags.ragsweep.config_label"] == quick.index).all()
    assert quick["params.chunker"].to_dict()["chunker=fixed,k=3"] == "fixed"
    assert set(quick["params.embedder"]) == {"minilm"} and set(quick["params.dataset"]) == {"sotu_qa"}
    assert "params.sweep" not in jobs and "params.paths" not in jobs and "params.hydra/launcher" not in jobs
    # the fingerprint of the plainly composed config: the choices went to params, not into the config
    with initialize_config_dir(str(project / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["chunker=fixed", "k=3"])
    fingerprint = plan_job(cfg).fingerprint(quick.loc["chunker=fixed,k=3", "tags.dataset.fingerprint"])
    assert quick.loc["chunker=fixed,k=3", "tags.ragsweep.config_fingerprint"] == fingerprint


def test_the_verify_rerun_is_named_and_filtered_like_the_winner(project):
    result = _ragsweep(project, "best", "--name", "quick", "--where", "params.chunker = recursive", "--verify")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("dataset sotu_qa (the dataset of the experiment's newest run); "
                                    "also runs on tiny: --dataset NAME\n")
    assert "verified: every metric of the rerun equals the recorded run" in result.stdout
    assert "quick.manifest.json and quick.per_query.jsonl (commit all three for `ragsweep gate`)" in result.stdout
    manifest = json.loads((project / "conf" / "best" / "quick.manifest.json").read_text())
    assert manifest["label"] == "chunker=recursive,k=3" and manifest["choices"]["chunker"] == "recursive"
    rerun = _jobs(project).iloc[0]
    assert rerun["tags.mlflow.runName"] == rerun["tags.ragsweep.config_label"] == "chunker=recursive,k=3"
    assert rerun["params.chunker"] == "recursive"  # the export carried the winner's choices
    assert rerun["tags.ragsweep.config_fingerprint"] == manifest["config_fingerprint"]
    assert rerun["tags.ragsweep.rerun"] == "verify"  # told apart from the runs of a sweep
    # the rerun now stands for the winner's configuration; it is still called by its choices
    again = _ragsweep(project, "best", "--name", "quick", "--where", "params.chunker = 'recursive' and params.k < 4")
    rows = [line for line in again.stdout.splitlines() if line.startswith("| 1 ")]
    assert rows and "| chunker=recursive,k=3 |" in rows[0] and rerun.run_id in rows[0]
    assert not [line for line in again.stdout.splitlines() if line.startswith("| ") and "best/" in line]


def test_gate_shows_absolute_and_relative_change_and_the_p_value(project):
    baseline = str(project / "conf" / "best" / "quick.yaml")
    passed = _ragsweep(project, "gate", "--baseline", baseline)  # a rerun of the baseline: equal numbers
    assert passed.returncode == 0, passed.stderr[-3000:]
    assert "more than 5% of its recorded value or a paired bootstrap on the baseline's 68 questions" in passed.stdout
    assert "| token_iou | 0.0298   | 0.0298  | 0.0    | +0.0%    | 1.0     | ok      |" in passed.stdout
    assert passed.stdout.rstrip().endswith("gate passed")
    other = _jobs(project).set_index("tags.mlflow.runName").loc["chunker=fixed,k=3"].run_id
    failed = _ragsweep(project, "gate", "--baseline", baseline, "--run", other, "--allow-other-config",
                       "--metrics", "token_iou,recall")
    assert failed.returncode == 1
    assert "| metric    | recorded | current | change  | change % | p-value | verdict" in failed.stdout
    token_iou = next(line for line in failed.stdout.splitlines() if line.startswith("| token_iou"))
    assert "-79.3%" in token_iou and "FAIL: dropped more than 5%, worse at p < 0.05" in token_iou  # 0.0298 -> 0.0062
    assert failed.stderr.startswith("ragsweep: gate failed: token_iou (-79.3%, p 0.0) dropped more than 5%")


def test_a_latency_gate_compares_the_runs_timings_and_retimes_a_rerun(project, tmp_path):
    """Each run keeps its timed milliseconds (latency.json); `--run` is gated on that run's, a rerun on fresh ones."""
    import mlflow

    from ragsweep.results.gate_rows import MaxDrop, latency_row

    baseline = project / "conf" / "best" / "quick.yaml"
    manifest = json.loads(baseline.with_name("quick.manifest.json").read_text())
    other = _jobs(project).set_index("tags.mlflow.runName").loc["chunker=fixed,k=3"].run_id
    client = mlflow.MlflowClient(f"sqlite:///{project}/mlruns/mlflow.db")
    timings = [json.loads(Path(client.download_artifacts(run, "latency.json", str(tmp_path))).read_text())["latency_ms"]
               for run in (manifest["run_id"], other)]
    expected = latency_row("latency_ms_p95", *map(np.array, timings), MaxDrop(0.2, True), 0.05)
    gated = _ragsweep(project, "gate", "--baseline", str(baseline), "--run", other, "--allow-other-config",
                      "--metrics", "latency_ms_p95", "--max-drop", "20%")
    assert gated.returncode == (0 if expected["ok"] else 1), gated.stderr[-3000:]
    row = [cell.strip() for cell in next(line for line in gated.stdout.splitlines()
                                         if line.startswith("| latency_ms_p95")).split("|")[1:-1]]
    assert row[1:3] == [str(expected["recorded"]), str(expected["current"])] and row[-1] == expected["verdict"]
    assert "a latency percentile when it rose by more than 20% and a bootstrap" in gated.stdout
    clone = tmp_path / "clone"  # the rerun logs to the clone's store, so the other tests' runs stay as they were
    clone.mkdir()
    shutil.copy(project / "sweep.py", clone)
    shutil.copytree(project / "sweeps", clone / "sweeps")
    shutil.copytree(project / "conf", clone / "conf", symlinks=True)
    (clone / ".cache").symlink_to(project / ".cache")  # the project's stage cache, holding the baseline's stages
    fresh = _ragsweep(clone, "--tracking-uri", f"sqlite:///{project}/mlruns/mlflow.db", "gate", "--baseline",
                      "conf/best/quick.yaml", "--metrics", "latency_ms_p95", "--max-drop", "20%")
    assert fresh.returncode in (0, 1), fresh.stderr[-3000:]
    assert "a rerun of the baseline config (search, rerank and answers timed afresh)" in fresh.stdout
    row = [cell.strip() for cell in next(line for line in fresh.stdout.splitlines()
                                         if line.startswith("| latency_ms_p95")).split("|")[1:-1]]
    assert row[1] == str(expected["recorded"]) and row[2] not in ("", "nan")
    store = mlflow.MlflowClient(f"sqlite:///{clone}/mlruns/mlflow.db")
    counts = store.search_runs([store.get_experiment_by_name("ragsweep").experiment_id])[0].data.metrics
    assert counts["cache_hits_chunks"] >= 1 and counts["cache_misses_retrieval"] >= 1  # retrieval ran, timed anew,
    assert counts["cache_hits_retrieval"] == 0  # though the cache held it


def test_gate_in_a_fresh_clone_needs_only_the_committed_export(project, tmp_path):
    """CI has sweep.py, conf/ (with conf/best/) and sweeps/, and no MLflow store: the baseline's per-question
    values come from conf/best/base.per_query.jsonl, checked against the manifest's sha256."""
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copy(project / "sweep.py", clone)
    shutil.copytree(project / "sweeps", clone / "sweeps")
    shutil.copytree(project / "conf", clone / "conf", symlinks=True)
    (clone / ".cache").symlink_to(project / ".cache")  # a CI's kept stage cache: the store is what it lacks
    passed = _ragsweep(clone, "gate", "--baseline", "conf/best/base.yaml")
    assert passed.returncode == 0, passed.stderr[-3000:]
    assert "| token_iou | 0.0298   | 0.0298  | 0.0    | +0.0%    | 1.0     | ok      |" in passed.stdout  # 1.0: the p-value
    assert passed.stdout.rstrip().endswith("gate passed")
    questions = clone / "conf" / "best" / "base.per_query.jsonl"
    lines = questions.read_text().splitlines()
    assert len(lines) == 68 and set(json.loads(lines[0])) == {"id", "question_sha256", "metrics"}  # no text, no spans
    first = json.loads(lines[0])
    first["metrics"]["token_iou"] += 0.5  # one value edited
    questions.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    tampered = _ragsweep(clone, "gate", "--baseline", "conf/best/base.yaml")
    assert tampered.returncode == 2 and tampered.stderr.count("\n") == 1, tampered.stderr
    assert tampered.stderr.startswith("ragsweep: error: conf/best/base.per_query.jsonl does not match the sha256")
    shutil.rmtree(clone / "mlruns")  # the passing rerun's store
    questions.unlink()  # an export written before best wrote the file: no file and no store to fall back on
    old = _ragsweep(clone, "gate", "--baseline", "conf/best/base.yaml")
    assert old.returncode == 2 and old.stderr.count("\n") == 1, old.stderr
    assert "re-run `ragsweep best`" in old.stderr and not (clone / "mlruns").exists()


def test_report_compares_one_dataset_and_says_which(project):
    """One self-contained HTML file, logged to the sweep's run, of the runs on one dataset, saying which."""
    import mlflow

    newest = _ragsweep(project, "report")
    assert newest.returncode == 0, newest.stderr[-3000:]
    assert newest.stdout.startswith("dataset sotu_qa (the dataset of the experiment's newest run); also runs on tiny")
    page = (project / "reports" / "ragsweep.html").read_text()
    assert "configurations on dataset sotu_qa" in page and "<b>chunker=recursive,k=3</b>" in page
    assert "best/" not in page and "dataset.path=" not in page  # no rerun name, no run on tiny
    assert page.count('src="data:image/png;base64,') == 5  # effects, bars, k curves, Pareto (latency_ms_p50), corpora
    assert "Which setting moved token_iou: effects with 95% intervals" in page
    assert "<script" not in page and "http://" not in page and "https://" not in page  # one file, nothing fetched
    for heading in ("Ranking", "Is the best config really better?", "against k", "Pareto front", "per corpus"):
        assert heading in page
    assert page.count("p-value") >= 1 and "chunker=fixed,k=5" in page
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(project / "reports" / "ragsweep.html", ARTIFACTS / "report.html")  # kept for a look after the run
    logged = mlflow.MlflowClient().list_artifacts(_parents(project)[-1])  # to the sweep the report is of
    assert "ragsweep.html" in {artifact.path for artifact in logged}
    tiny = _ragsweep(project, "report", "--dataset", "tiny", "--output", "reports/tiny.html")
    assert tiny.returncode == 0, tiny.stderr[-3000:]
    assert tiny.stdout.startswith("dataset tiny (as --dataset asks); also runs on sotu_qa")
    assert "Only one configuration: no effects to estimate." in (project / "reports" / "tiny.html").read_text()


def test_the_notebook_ranks_one_dataset_with_the_renamed_latency(project, run_notebook):
    cells = run_notebook(project)
    printed = "".join(o.get("text", "") for cell in cells for o in cell.outputs)
    assert "dataset sotu_qa; the experiment has runs on sotu_qa, tiny" in printed
    assert "best: chunker=recursive,k=3  (token_iou = 0.0298, run " in printed
    assert len([o for cell in cells for o in cell.outputs if "image/png" in o.get("data", {})]) == 2
    table = "".join(o.get("data", {}).get("text/html", "") for o in cells[1].outputs)
    assert "<th>latency_ms_p50</th>" in table and "dataset.path=" not in table  # no run on tiny
    effects = next(cell for cell in cells if "sweep_effects" in cell.source)
    assert "effects on token_iou in sweep run " in "".join(o.get("text", "") for o in effects.outputs)
    assert "<td>chunker</td>" in "".join(o.get("data", {}).get("text/html", "") for o in effects.outputs)


def test_effects_of_the_quick_grid_are_printed_and_logged_to_its_parent_run(project):
    import mlflow

    result = _ragsweep(project, "effects")
    assert result.returncode == 0, result.stderr[-3000:]
    parent = _parents(project)[-1]
    assert result.stdout.startswith("dataset sotu_qa (the dataset of the sweep's newest run)\n")
    assert (f"Effects on token_iou (the metric the sweep ranks by; --metric picks another) of the settings sweep run "
            f"{parent} varied, across its 4 configurations:") in result.stdout
    assert "model: y[q,c] = mu + b_q + main effects + two-way interactions + e;" in result.stdout
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in result.stdout.splitlines()
            if line.startswith("| ") and not line.startswith("| factor")]
    assert [row[:2] for row in rows[:4]] == [["chunker", "fixed"], ["chunker", "recursive"], ["k", "3"], ["k", "5"]]
    assert {row[4] for row in rows} == {"68"}  # every configuration ran the 68 questions
    assert "two-way interactions estimated: 1; shown (an interval excludes 0): " in result.stdout
    assert result.stdout.rstrip().endswith(f"logged effects.json and effects.md to sweep run {parent}")
    client = mlflow.MlflowClient(f"sqlite:///{project}/mlruns/mlflow.db")
    assert {"effects.json", "effects.md"} <= {artifact.path for artifact in client.list_artifacts(parent)}
    saved = json.loads(Path(client.download_artifacts(parent, "effects.json", str(project))).read_text())
    assert saved["metric"] == "token_iou" and saved["questions"] == 68 and saved["configurations"] == 4
    # on a full grid whose configurations all ran every question, a main effect is the contrast of the runs' means
    jobs = _jobs(project).drop_duplicates("tags.mlflow.runName")
    jobs = jobs[jobs["tags.dataset.name"] == "sotu_qa"].set_index("tags.mlflow.runName")["metrics.token_iou"]
    fixed = jobs[["chunker=fixed,k=3", "chunker=fixed,k=5"]].mean() - jobs.mean()
    effect = next(row for row in saved["effects"] if (row["factor"], row["level"]) == ("chunker", "fixed"))
    assert effect["effect"] == pytest.approx(fixed, abs=1e-9) and effect["low"] <= effect["effect"] <= effect["high"]


def _parents(project: Path) -> list[str]:
    """The experiment's sweep parent runs, oldest first: the one job on `tiny`, then the quick grid."""
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{project}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"], order_by=["attributes.start_time ASC"])
    return list(runs[runs["tags.ragsweep.role"] == "parent"].run_id)


def test_best_pareto_exports_each_point_of_the_front_as_a_config_that_loads(project):
    from ragsweep.results.exported import read_manifest

    result = _ragsweep(project, "best", "--pareto", "token_iou,latency_ms_p95", "--name", "front")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Pareto front of 4 configurations over token_iou (higher is better), latency_ms_p95 (lower is better)" \
        in result.stdout  # the quick grid's four on sotu_qa; the run on tiny is another dataset
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ") and "chunker=" in line]
    exports = sorted((project / "conf" / "best").glob("front_pareto_*.yaml"))
    assert rows and len(exports) == len({line.split("|")[1] for line in rows})  # one export per point
    assert "latency_ms_p95 is a timing of each run on this machine" in result.stdout
    for number, path in enumerate(exports, start=1):
        manifest = read_manifest(path)
        assert manifest["dataset"] == "sotu_qa" and manifest["metric"] == "token_iou"
        assert manifest["pareto"]["point"] == number and manifest["pareto"]["directions"] == ["maximize", "minimize"]
        assert manifest["run_id"] in result.stdout and path.with_name(f"{path.stem}.per_query.jsonl").is_file()
    assert "rerun one with: ragsweep sweep --config-name best/front_pareto_1" in result.stdout


# (arguments, exit code, what the one line on stderr says). {baseline}: conf/best/base.yaml, written by `best`;
# {other_run}: a FINISHED job of another configuration; {parent_run}: the quick sweep's parent run;
# {missing_store}: a sqlite file in a folder that does not exist, which no command may create.
BAD_INPUT = [
    (["best", "--name", "base", "--where", "params.k <= ten"], 2, "--where: params.k holds numbers (3, 5): 'ten' is not a number"),
    (["best", "--name", "base", "--where", "params.k ~ 3"], 2, "--where: cannot read 'params.k ~ 3'; write <column> <op> <value>"),
    (["best", "--name", "base", "--where", "params.k = 3 or params.k = 5"], 2, "--where: cannot read 'params.k = 3 or params.k = 5'"),
    (["best", "--name", "base", "--where", "params.k <="], 2, "--where: cannot read 'params.k <='"),
    (["best", "--name", "base", "--where", "chunker = fixed"], 2, "--where: no column 'chunker'; did you mean params.chunker?"),
    (["best", "--name", "base", "--where", "params.size = 3"], 2, "--where: no column 'params.size'; params: "),
    (["best", "--name", "base", "--where", "params.chunker > fixed"], 2, "--where: params.chunker holds text (fixed, recursive): compare it with = or !="),
    (["best", "--name", "base", "--where", "params.k = 4"], 2, "no FINISHED run on dataset sotu_qa meets --where 'params.k = 4'"),
    (["best", "--name", "base", "--metric", "latency_ms_p50"], 2, "--metric latency_ms_p50 is not a metric to rank by; choose one of"),
    (["best", "--name", "base", "--dataset", "beir"], 2, "--dataset beir: no FINISHED run on it; datasets: sotu_qa, tiny"),
    (["best", "--name", "base", "--experiment", "nope"], 2, "no experiment 'nope' in"),
    (["best", "--name", "base", "--top", "0"], 2, "--top 0: give the number of rows to print, 1 or more"),
    (["best", "--pareto", "token_iou"], 2, "--pareto token_iou: give two or more comma-separated metrics to trade off"),
    (["best", "--pareto", "token_iou,latency"], 2, "--pareto: unknown metric 'latency'; metrics with a direction: "),
    (["best", "--pareto", "token_iou,claims_per_answer"], 2, "--pareto: claims_per_answer has no direction"),
    (["report", "--dataset", "beir"], 2, "--dataset beir: no FINISHED run on it; datasets: sotu_qa, tiny"),
    (["report", "--metric", "recal"], 2, "--metric recal is not a metric"),
    (["gate", "--baseline", "{baseline}", "--max-drop", "abc"], 2, "--max-drop abc: not a number; give a share"),
    (["gate", "--baseline", "{baseline}", "--max-drop", "-1"], 2, "--max-drop -1: a drop limit cannot be negative"),
    (["gate", "--baseline", "{baseline}", "--max-drop", "-5%"], 2, "--max-drop -5%: a drop limit cannot be negative"),
    (["gate", "--baseline", "{baseline}", "--max-drop", "150%"], 2, "--max-drop 150%: a metric cannot drop by more than 100%"),
    (["gate", "--baseline", "{baseline}", "--max-drop", "2"], 2, "--max-drop 2: metrics lie in [0, 1], so this allows any drop"),
    (["gate", "--baseline", "{baseline}", "--significance", "0"], 2, "--significance 0: give a p-value threshold strictly between 0 and 1"),
    (["gate", "--baseline", "{baseline}", "--significance", "1.5"], 2, "--significance 1.5: give a p-value threshold strictly between 0 and 1"),
    (["gate", "--baseline", "{baseline}", "--metrics", "token_iou_std"], 2, "--metrics token_iou_std: not a metric the baseline recorded per question"),
    (["gate", "--baseline", "{baseline}", "--run", "nope"], 2, "--run: no run 'nope' in sqlite:///"),
    (["gate", "--baseline", "{baseline}", "--run", "{other_run}"], 2, "is another configuration (chunker=fixed,k=3, fingerprint"),
    (["gate", "--baseline", "{baseline}", "--run", "{parent_run}"], 2, "has no artifact per_query.jsonl"),
    (["gate", "--baseline", "conf/best/missing.yaml"], 2, "conf/best/missing.yaml or its manifest missing.manifest.json is missing"),
    (["--tracking-uri", "sqlite:///{missing_store}", "best"], 2, "no MLflow store at {missing_store}"),
    (["--tracking-uri", "sqlite:///{missing_store}", "report"], 2, "no MLflow store at {missing_store}"),
    (["--tracking-uri", "sqlite:///{missing_store}", "gate", "--baseline", "{baseline}", "--run", "{other_run}"], 2,
     "no MLflow store at {missing_store}"),
    (["--tracking-uri", "sqlite:///{missing_store}", "ui"], 2, "no MLflow store at {missing_store}"),
    (["gate", "--baseline", "{cut_manifest}"], 2, "cut.manifest.json: not valid JSON ("),
    (["gate", "--baseline", "{bad_yaml}"], 2, "bad.yaml: not valid YAML ("),
    (["--tracking-uri", "sqlite:///{not_sqlite}", "best"], 2, "not_sqlite.db is not a readable SQLite database"),
    (["--tracking-uri", "sqlite:///{not_sqlite}", "report"], 2, "not_sqlite.db is not a readable SQLite database"),
    (["effects", "--sweep", "nope"], 2, "--sweep nope: no such run; the experiment's sweeps, newest first: "),
    (["effects", "--sweep", "{other_run}"], 2, "is a job run, not a sweep's parent run; the experiment's sweeps"),
    (["effects", "--sweep", "{tiny_sweep}"], 2, "its one configuration on dataset tiny (chunker.size=8,"),
    (["effects", "--metric", "latency_ms_p50"], 2, "--metric latency_ms_p50 has no per-question values to estimate"),
    (["effects", "--metric", "answer_f1"], 2, "--metric answer_f1: no configuration of sweep"),
    (["labels", "sample", "--n", "0"], 2, "--n 0: give the number of claims to draw, 1 or more"),
    (["labels", "sample", "--experiment", "ragsweep"], 2, "experiment 'ragsweep' has no judged claim to draw"),
]


def _broken_files(project: Path) -> dict[str, Path]:
    """A cut manifest, a baseline config that is not YAML and a store that is not SQLite, outside conf/best."""
    folder = project / "broken"
    folder.mkdir(exist_ok=True)
    base, manifest = project / "conf" / "best" / "base.yaml", project / "conf" / "best" / "base.manifest.json"
    (folder / "cut.yaml").write_text(base.read_text())
    (folder / "cut.manifest.json").write_text(manifest.read_text()[:200])
    (folder / "bad.yaml").write_text("k: [3\n  chunker: {")
    (folder / "bad.manifest.json").write_text(manifest.read_text())
    (folder / "not_sqlite.db").write_bytes(b"not a database, " * 100)
    return {"cut_manifest": folder / "cut.yaml", "bad_yaml": folder / "bad.yaml", "not_sqlite": folder / "not_sqlite.db"}


@pytest.mark.parametrize(("args", "code", "message"), BAD_INPUT, ids=[" ".join(row[0]) for row in BAD_INPUT])
def test_bad_input_is_refused_in_one_line_and_writes_nothing(project, args, code, message, preloaded, tmp_path):
    """Each row is `ragsweep ARGS` in a process of its own, forked from one that has imported what the
    console script imports (tests/preloaded.py)."""
    import mlflow

    before = _written(project)
    runs = mlflow.search_runs(experiment_names=["ragsweep"])
    places = {"baseline": "conf/best/base.yaml", "parent_run": runs[runs["tags.ragsweep.role"] == "parent"].run_id.iloc[0],
              "other_run": _jobs(project).set_index("tags.mlflow.runName").loc["chunker=fixed,k=3"].run_id,
              "missing_store": project / "nowhere" / "mlflow.db", "tiny_sweep": _parents(project)[0],
              **_broken_files(project)}
    returncode, stdout, stderr = preloaded.run("ragsweep", [arg.format(**places) for arg in args], project, _env(),
                                               tmp_path)
    assert returncode == code, stdout + stderr
    assert stderr.splitlines() == [stderr.strip()], stderr  # one line
    assert stderr.startswith("ragsweep: error: ") and message.format(**places) in stderr, stderr
    assert _written(project) == before  # no export overwritten, no report, no run started
    assert not places["missing_store"].parent.exists()  # no empty store created


def _written(project: Path) -> tuple:
    """What a refused command must leave as it was: exports, reports and the store's runs."""
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{project}/mlruns/mlflow.db")
    files = {path: (path.read_bytes(), path.stat().st_mtime_ns)
             for folder in ("conf/best", "reports") for path in (project / folder).glob("*")}
    return files, len(mlflow.search_runs(search_all_experiments=True))
