"""The user's loop, run as a user runs it: sweep → compare → best → report → gate, each command a process of
its own (forked ready-imported by tests/preloaded.py, or started afresh where a test signals it).

Each test works in a scratch copy of the project (sweep.py, conf/, sweeps/) with its own MLflow
store and stage cache, so nothing here touches the checkout's mlruns/ or conf/best/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from tests.preloaded import run_command

ROOT = Path(__file__).resolve().parents[1]
RAGSWEEP = Path(sys.executable).with_name("ragsweep")  # the installed console script
ARTIFACTS = ROOT / "test-artifacts"  # screenshots and reports kept for a look after the run
QUICK = ["chunker=fixed,k=3", "chunker=fixed,k=5", "chunker=recursive,k=3", "chunker=recursive,k=5"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}  # entry points set them
    # tests/faults.py importable by the jobs; a PYTHONPATH already set (a worktree's src/) still comes first
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT)]))}


def _sweep(project: Path, *args: str, version: str | None = None) -> subprocess.CompletedProcess:
    """`python sweep.py ARGS` in the project; `version`: the one tests.own_components.VersionedBM25 declares."""
    env = {**_env(), **({"TEST_BM25_VERSION": version} if version else {})}
    return run_command([sys.executable, "sweep.py", *args], project, env)


def _ragsweep(project: Path, *args: str) -> subprocess.CompletedProcess:
    return run_command([str(RAGSWEEP), *args], project, _env())


def _runs(project: Path, experiment: str = "ragsweep"):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{project}/mlruns/mlflow.db")
    return mlflow.search_runs(experiment_names=[experiment])


def _jobs(runs):
    return runs[runs["tags.ragsweep.role"] == "job"]


@pytest.fixture(scope="module")
def project(tmp_path_factory, scratch_project) -> Path:
    """A scratch project that has run the `quick` grid once."""
    folder = scratch_project(tmp_path_factory.mktemp("project"))
    result = _sweep(folder, "-m", "+sweep=quick")
    assert result.returncode == 0, result.stderr[-3000:]
    (folder / "quick.stdout").write_text(result.stdout)
    return folder


def test_a_named_grid_is_one_parent_run_with_tagged_children_and_a_ranked_summary(project):
    import mlflow

    runs = _runs(project)
    parents, jobs = runs[runs["tags.ragsweep.role"] == "parent"], _jobs(runs)
    assert len(parents) == 1 and parents.status.iloc[0] == "FINISHED"
    assert parents["tags.mlflow.runName"].iloc[0].startswith("sweep:quick ")
    parent_id = parents.run_id.iloc[0]
    assert sorted(jobs["tags.mlflow.runName"]) == QUICK
    assert (jobs["tags.mlflow.parentRunId"] == parent_id).all() and set(jobs.status) == {"FINISHED"}
    assert set(jobs["tags.ragsweep.sweep"]) == {"quick"}
    assert jobs["tags.ragsweep.config_fingerprint"].str.fullmatch("[0-9a-f]{64}").all()
    assert jobs["tags.ragsweep.config_fingerprint"].nunique() == 4
    assert jobs["tags.dataset.fingerprint"].nunique() == 1
    assert jobs["tags.ragsweep.git_sha"].str.fullmatch(r"[0-9a-f]{40}(-dirty)?|unknown").all()
    assert (jobs["tags.version.torch"] == "2.13.0+cpu").all() and (jobs["tags.version.mlflow"] == "3.17.2").all()
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(parent_id)}
    assert artifacts == {"summary.csv", "summary.md"}
    # printed ranked by the grid's optimized_metric (token_iou), best first
    stdout = (project / "quick.stdout").read_text()
    assert "Sweep summary, ranked by token_iou" in stdout
    printed = [line.split("|")[2].strip() for line in stdout.splitlines() if line.startswith("| ") and "chunker=" in line]
    best_first = jobs.sort_values("metrics.token_iou", ascending=False)["tags.mlflow.runName"].tolist()
    assert printed == best_first


def test_a_rerun_skips_finished_configs_and_force_reruns_them(project):
    args = ["-m", "+sweep=quick", "k=7", "experiment=again"]  # the command line overrides the grid's k axis
    first = _sweep(project, *args)
    assert first.returncode == 0, first.stderr[-3000:]
    assert sorted(_jobs(_runs(project, "again"))["tags.mlflow.runName"]) == ["chunker=fixed,k=7", "chunker=recursive,k=7"]

    second = _sweep(project, *args)
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.count("skipped chunker=") + second.stderr.count("skipped chunker=") == 2
    runs = _runs(project, "again")
    assert len(_jobs(runs)) == 2  # nothing ran again...
    latest_parent = runs[runs["tags.ragsweep.role"] == "parent"].sort_values("start_time").iloc[-1]
    summary = (Path(latest_parent.artifact_uri.removeprefix("file://")) / "summary.csv").read_text()
    assert summary.count(",yes,") == 2  # ...and the summary still lists both, as reused

    forced = _sweep(project, *args, "+force=true")
    assert forced.returncode == 0, forced.stderr[-3000:]
    jobs = _jobs(_runs(project, "again"))
    assert len(jobs) == 4 and set(jobs.status) == {"FINISHED"}
    assert jobs.groupby("tags.mlflow.runName")["metrics.ndcg"].nunique().eq(1).all()  # same config, same numbers


def test_parallel_jobs_give_the_same_runs_and_metrics_without_lock_errors(project, tmp_path):
    """The quick grid's two chunkers at k=3 on two workers and a cold cache: both embed at once, and the texts they
    share (every question, many passages) must be embedded once between them."""
    result = _sweep(project, "-m", "+sweep=quick", "k=3", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                    "experiment=parallel", f"cache.dir={tmp_path / 'cache'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "database is locked" not in result.stdout + result.stderr
    assert "joblib workers fork from a server that preloads" in result.stdout + result.stderr
    runs = _runs(project, "parallel")
    parent = runs[runs["tags.ragsweep.role"] == "parent"]
    # the workers were forked before the parent run existed: they found it in the sweep folder
    assert len(parent) == 1 and (_jobs(runs)["tags.mlflow.parentRunId"] == parent.run_id.iloc[0]).all()
    assert _jobs(runs)["tags.ragsweep.pid"].nunique() == 2  # both workers ran jobs
    parallel = _jobs(runs).set_index("tags.mlflow.runName").sort_index()
    grid = _jobs(_runs(project)).drop_duplicates("tags.mlflow.runName").set_index("tags.mlflow.runName").sort_index()
    basic = grid.loc[[label for label in QUICK if label.endswith(",k=3")]]
    assert list(parallel.index) == list(basic.index)  # no duplicates, none missing
    assert set(parallel.status) == {"FINISHED"}
    metrics = [c for c in basic.columns if c.startswith("metrics.") and not c.startswith(
        ("metrics.seconds_", "metrics.cache_", "metrics.latency_ms", "metrics.search_ms", "metrics.rerank_ms",
         "metrics.cores_busy_elsewhere"))]
    assert parallel[metrics].equals(basic.loc[parallel.index, metrics])
    assert (parallel["tags.ragsweep.config_fingerprint"] == basic.loc[parallel.index, "tags.ragsweep.config_fingerprint"]).all()
    # the two workers embedded each text once between them: the file lock made the second wait and read (the
    # grid's k=5 jobs, run after them, embedded nothing)
    assert parallel["metrics.cache_misses_embeddings"].sum() == grid["metrics.cache_misses_embeddings"].sum()


def test_a_lone_job_shares_its_embedding_with_a_helper_on_the_idle_worker(project, tmp_path):
    """One configuration on two joblib workers: the second worker runs an embedding helper, which takes shards of
    the job's embedding (32 of ~455 passages each, minilm: seconds each), so both embed and no text twice."""
    from tests.cluster.cluster_scenario import SPREAD_CHUNK, distinct_texts

    sweep_dir = tmp_path / "sweep"
    result = _sweep(project, "-m", "retriever=dense", "embedder=minilm", f"chunker.size={SPREAD_CHUNK}",
                    "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "cache.embedding_shard=32",
                    "experiment=helped", f"cache.dir={tmp_path / 'cache'}", f"hydra.sweep.dir={sweep_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    job = _jobs(_runs(project, "helped"))
    assert len(job) == 1 and job.status.iloc[0] == "FINISHED"  # the helper records no run
    helped = [json.loads(path.read_text()) for path in sweep_dir.glob("*/embedding_helper.json")]
    assert len(helped) == 1 and helped[0]["embedded"] > 0, helped
    assert helped[0]["ragsweep.pid"] != job["tags.ragsweep.pid"].iloc[0]
    embedded = job["metrics.cache_misses_embeddings"].iloc[0]
    assert embedded > 0 and embedded + helped[0]["embedded"] == distinct_texts(SPREAD_CHUNK)


def test_a_finished_run_of_older_code_is_run_again_and_the_sweep_says_why(project):
    """A class declaring a new version of its code (the same BM25, version 2) gives the configuration a new
    fingerprint: the sweep warns that run X finished it with other versions and runs it again, once."""
    args = ("-m", "retriever=bm25", "retriever._target_=tests.own_components.VersionedBM25", "k=3",
            "experiment=versions")
    assert _sweep(project, *args).returncode == 0
    again = _sweep(project, *args, version="2")
    assert again.returncode == 0, again.stderr[-3000:]
    first = _jobs(_runs(project, "versions")).sort_values("start_time").iloc[0]
    assert (f"run {first.run_id} finished this configuration with code of other versions (then: none declared; "
            "now: retriever=2)") in again.stdout + again.stderr
    jobs = _jobs(_runs(project, "versions")).sort_values("start_time")
    assert len(jobs) == 2 and jobs["metrics.ndcg"].nunique() == 1  # the same numbers, recomputed
    assert jobs["tags.ragsweep.config_fingerprint_unversioned"].nunique() == 1
    assert jobs["tags.ragsweep.code_versions"].iloc[1] == "retriever=2"
    third = _sweep(project, *args, version="2")
    assert "skipped" in third.stdout + third.stderr and len(_jobs(_runs(project, "versions"))) == 2


def test_a_run_made_under_older_identity_rules_is_run_again_and_the_sweep_says_why(project):
    """A retrieval-only run from before its answer-only settings left the fingerprint carries the fingerprint those
    settings gave (no versions then, so the unversioned one): found, announced as a change of rules, run again."""
    from mlflow import MlflowClient

    args = ("-m", "retriever=bm25", "k=3", "experiment=rules")
    assert _sweep(project, *args).returncode == 0
    first = _jobs(_runs(project, "rules")).iloc[0]
    then = first["tags.ragsweep.config_fingerprint_unversioned"]
    assert then != first["tags.ragsweep.config_fingerprint"]
    client = MlflowClient(f"sqlite:///{project}/mlruns/mlflow.db")
    client.set_tag(first.run_id, "ragsweep.config_fingerprint", then)  # as the older code tagged it
    again = _sweep(project, *args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (f"run {first.run_id} finished this configuration under an older fingerprint (ragsweep's identity rules "
            "changed, its code's versions did not: none declared)") in again.stdout + again.stderr
    jobs = _jobs(_runs(project, "rules"))
    assert len(jobs) == 2 and jobs["metrics.ndcg"].nunique() == 1


def test_a_killed_sweep_resumes_without_losing_or_repeating_runs(project):
    # recursive's texts are embedded already (the module's sweep); sentence's are not: killed while embedding them
    args = [sys.executable, "sweep.py", "-m", "chunker=recursive,sentence", "k=3", "experiment=killed"]
    sweep = subprocess.Popen(args, cwd=project, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and sweep.poll() is None:
        time.sleep(0.2)
        try:
            runs = _runs(project, "killed")
        except Exception:  # the store or experiment is not there yet
            continue
        if (runs.status == "FINISHED").sum() >= 1:
            break
    assert sweep.poll() is None, "the sweep ended before it could be killed"
    os.killpg(sweep.pid, signal.SIGKILL)
    sweep.wait()
    before = _runs(project, "killed")
    assert (before.status == "RUNNING").any()  # at least the parent was left running by the dead process

    resumed = _sweep(project, *args[2:])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = _runs(project, "killed")
    assert not (after.status == "RUNNING").any()
    assert set(after[after.run_id.isin(before[before.status == "RUNNING"].run_id)].status) == {"KILLED"}
    finished = _jobs(after)[_jobs(after).status == "FINISHED"]
    assert finished["tags.ragsweep.config_fingerprint"].value_counts().eq(1).all()  # 0 duplicated
    assert len(finished) == 2  # 0 lost
    done_before = set(before[(before.status == "FINISHED")].run_id)
    assert done_before <= set(finished.run_id)  # work finished before the kill was kept, not redone


def test_parallel_workers_exit_when_their_launcher_is_killed(project, tmp_path):
    """Forked workers are not the launcher's children; killing the launcher alone must not leave them running."""
    args = [sys.executable, "sweep.py", "-m", "+sweep=quick", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
            "experiment=orphans", f"cache.dir={tmp_path / 'cache'}"]
    sweep = subprocess.Popen(args, cwd=project, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)  # its own process group: the launcher, the server, the workers
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and sweep.poll() is None and _group_size(sweep.pid) < 4:
        time.sleep(0.2)  # launcher + fork server + 2 workers
    assert sweep.poll() is None, "the sweep ended before its workers started"
    os.kill(sweep.pid, signal.SIGKILL)  # the launcher only, as `kill -9 <pid>` does
    sweep.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _group_size(sweep.pid):
        time.sleep(0.2)
    left = _group_size(sweep.pid)
    if left:
        os.killpg(sweep.pid, signal.SIGKILL)
    assert not left, f"{left} process(es) of the killed sweep still running"


def _group_size(group: int) -> int:
    import psutil

    alive = []
    for process in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(process.pid) == group and process.info["status"] != psutil.STATUS_ZOMBIE:
                alive.append(process.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return len(alive)


FAILING = "retriever._target_=tests.faults.ExplodingRetriever,ragsweep.retrieval.dense.DenseRetriever"


def test_a_failing_job_is_recorded_with_its_traceback_and_the_sweep_goes_on(project):
    import mlflow

    result = _sweep(project, "-m", FAILING, "experiment=failing")
    assert result.returncode == 1
    assert "1 of 2 job(s) FAILED" in result.stderr
    assert "RuntimeError: retriever exploded on purpose" in result.stderr.split("job(s) FAILED")[1]  # says why
    jobs = _jobs(_runs(project, "failing")).set_index("params.retriever._target_")
    assert jobs.loc["tests.faults.ExplodingRetriever", "status"] == "FAILED"
    assert jobs.loc["ragsweep.retrieval.dense.DenseRetriever", "status"] == "FINISHED"  # ran after the failure
    failed_id = jobs.loc["tests.faults.ExplodingRetriever", "run_id"]
    traceback = Path(mlflow.artifacts.download_artifacts(run_id=failed_id, artifact_path="traceback.txt")).read_text()
    assert "RuntimeError: retriever exploded on purpose" in traceback
    runs = _runs(project, "failing")
    assert set(runs[runs["tags.ragsweep.role"] == "parent"].status) == {"FAILED"}


def test_fail_fast_stops_the_sweep_at_the_first_failure(project):
    result = _sweep(project, "-m", FAILING, "experiment=failfast", "fail_fast=true")
    assert result.returncode == 1
    assert "fail_fast=true stops the sweep" in result.stderr
    runs = _runs(project, "failfast")
    assert list(_jobs(runs).status) == ["FAILED"]  # the second job never started
    assert set(runs[runs["tags.ragsweep.role"] == "parent"].status) == {"FAILED"}


def test_optuna_trades_the_optimized_metrics_one_child_run_per_trial_and_tags_its_pareto_trials(project):
    import yaml

    from ragsweep.metrics.pareto import non_dominated

    result = _sweep(project, "-m", "+sweep=optuna_pareto", "hydra.sweeper.n_trials=4", "experiment=optuna",
                    "hydra.sweep.dir=outputs/pareto", "reranker=none", "embedder=static",
                    "retriever=choice(bm25,dense)")  # command-line values override the file's axes
    assert result.returncode == 0, result.stderr[-3000:]
    runs = _runs(project, "optuna")
    jobs = _jobs(runs)
    output = result.stdout + result.stderr
    assert "Directions: ['maximize', 'minimize']" in output  # the study got both, from the sweep file
    assert output.count("Launching 1 jobs locally") == 4  # four trials...
    # ...each a child run, except a trial that drew a configuration already finished, answered from MLflow
    assert len(jobs) + len(re.findall(r"skipped \S*retriever=", output)) == 4
    assert set(jobs.status) == {"FINISHED"} and jobs["tags.ragsweep.config_fingerprint"].is_unique
    dense = jobs["params.retriever._target_"] == "ragsweep.retrieval.dense.DenseRetriever"
    assert set(jobs[dense]["params.embedder._target_"]) <= {"ragsweep.embedding.static.StaticEmbedder"}
    assert jobs[~dense].filter(like="params.embedder").isna().all().all()  # BM25 takes no embedder
    assert set(jobs["params.retriever._target_"]) <= {"ragsweep.retrieval.bm25.BM25Retriever",
                                                       "ragsweep.retrieval.dense.DenseRetriever"}
    parent = runs[runs["tags.ragsweep.role"] == "parent"].iloc[0]
    assert (jobs["tags.mlflow.parentRunId"] == parent.run_id).all()
    # each trial returned [token_iou, latency_ms_p95]: the study's Pareto solutions are the runs' logged values
    solutions = yaml.safe_load((project / "outputs" / "pareto" / "optimization_results.yaml").read_text())["solutions"]
    logged = {(row["metrics.token_iou"], row["metrics.latency_ms_p95"]) for _, row in jobs.iterrows()}
    assert solutions and all(tuple(solution["values"]) in logged for solution in solutions)
    # the runs on the front of those metrics, in the registry's directions, are tagged, and the parent lists them
    front = non_dominated(jobs[["metrics.token_iou", "metrics.latency_ms_p95"]].to_numpy(), ["maximize", "minimize"])
    assert jobs["tags.ragsweep.pareto"].tolist() == ["true" if on else "false" for on in front]
    assert sorted(parent["tags.ragsweep.pareto.runs"].split(",")) == sorted(jobs.run_id[front])
    assert parent["tags.ragsweep.pareto.directions"] == "maximize,minimize"
    assert "Pareto front over token_iou (maximize), latency_ms_p95 (minimize)" in result.stdout


def test_best_exports_a_config_that_reruns_to_the_same_numbers_and_gate_guards_it(project):
    """`--verify` (a rerun inside `best`) is tests/cli/test_results.py's; here the user reruns the export."""
    result = _ragsweep(project, "best", "--experiment", "ragsweep", "--metric", "token_iou", "--top", "3",
                       "--where", "params.k <= 3", "--name", "quick")
    assert result.returncode == 0, result.stderr[-3000:]
    table = [line for line in result.stdout.splitlines() if line.startswith("| ") and "chunker=" in line]
    assert len(table) == 2 and all(",k=3" in line for line in table)  # --where kept k <= 3 only
    config = project / "conf" / "best" / "quick.yaml"
    manifest = json.loads((project / "conf" / "best" / "quick.manifest.json").read_text())
    assert manifest["metric"] == "token_iou" and manifest["dataset"] == "sotu_qa"
    assert len(manifest["config_fingerprint"]) == 64 and len(manifest["dataset_fingerprint"]) == 64
    assert manifest["packages"]["mlflow"] == "3.17.2" and manifest["git_sha"]
    winner = _jobs(_runs(project)).set_index("run_id").loc[manifest["run_id"]]
    assert manifest["metrics"]["token_iou"] == winner["metrics.token_iou"]
    # a plain rerun by the user: same config fingerprint as the exported run
    rerun = _sweep(project, "--config-name", "best/quick")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    newest = _runs(project).sort_values("start_time").iloc[-1]
    assert newest["tags.ragsweep.config_fingerprint"] == manifest["config_fingerprint"]
    assert newest["tags.mlflow.runName"] == manifest["label"] == winner["tags.mlflow.runName"]  # named like the winner
    assert newest["tags.ragsweep.rerun"] == "export" and pd.isna(winner.get("tags.ragsweep.rerun"))  # told apart
    for name in ("token_iou", "token_recall", "recall", "mrr", "ndcg"):  # the same numbers
        assert newest[f"metrics.{name}"] == winner[f"metrics.{name}"], name

    passed = _ragsweep(project, "gate", "--baseline", str(config), "--max-drop", "0.02", "--run", newest.run_id)
    assert passed.returncode == 0, passed.stderr[-3000:]
    assert "gate passed" in passed.stdout
    worse = _jobs(_runs(project)).sort_values("metrics.token_iou").run_id.iloc[0]  # fixed, k=5: far lower IoU
    failed = _ragsweep(project, "gate", "--baseline", str(config), "--max-drop", "0.02", "--run", worse,
                       "--metrics", "token_iou,recall", "--allow-other-config")  # another config than the baseline's
    assert failed.returncode == 1
    assert "| token_iou" in failed.stdout and "gate failed: token_iou" in failed.stderr


def test_best_and_gate_explain_what_is_missing(project, tmp_path):
    unknown = _ragsweep(project, "best", "--experiment", "nope")
    assert unknown.returncode == 2 and "no experiment 'nope'" in unknown.stderr and "ragsweep" in unknown.stderr
    bad_filter = _ragsweep(project, "best", "--where", "params.k ~ 3")
    assert bad_filter.returncode == 2 and "--where: cannot read" in bad_filter.stderr
    missing = _ragsweep(project, "gate", "--baseline", str(tmp_path / "none.yaml"))
    assert missing.returncode == 2 and "ragsweep best --experiment" in missing.stderr


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1400,900", "--virtual-time-budget=20000"]


def test_ragsweep_ui_lists_the_experiment_and_its_runs_in_a_real_browser(project, tmp_path):
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: `make test` installs it (apt-get install chromium)"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([str(RAGSWEEP), "ui", "--port", str(port)], cwd=project, env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        assert f"http://127.0.0.1:{port}" in server.stdout.readline()
        base = f"http://127.0.0.1:{port}"
        _wait_for(f"{base}/health")
        with urllib.request.urlopen(f"{base}/api/2.0/mlflow/experiments/get-by-name?experiment_name=ragsweep") as answer:
            experiment_id = json.load(answer)["experiment"]["experiment_id"]
        # the printed link opens the experiment on its runs table (MLflow's model-training view), not on
        # MLflow 3's GenAI overview of traces, in the view the latest sweep saved: its summary metrics as columns,
        # best first, without the reruns of `best --verify` and `gate`
        printed = f"{base}/#/experiments/{experiment_id}/runs?viewStateShareKey=ragsweep&workflowType=machine_learning"
        listed = [server.stdout.readline()]  # the 5 experiments changed last, before the server starts
        while listed[-1].startswith("  runs of "):  # (other tests of the file add experiments)
            listed.append(server.stdout.readline())
        link = (rf"  runs of \S+: {re.escape(base)}/#/experiments/\d+/runs\?"
                r"(viewStateShareKey=ragsweep&)?workflowType=machine_learning\n")
        assert 1 <= len(listed) - 1 <= 5 and all(re.fullmatch(link, line) for line in listed[:-1]), listed
        assert any("viewStateShareKey" in line for line in listed), listed  # an experiment a sweep summarised
        runs = _runs(project)
        shown = runs["tags.ragsweep.rerun"].isna() if "tags.ragsweep.rerun" in runs else runs.index >= 0
        assert 0 < shown.sum() < len(runs)  # the verify rerun and the gate's, left out
        for _ in range(5):  # a cold server can answer the page before its first search returns
            opened = _text(_browser(tmp_path, "--dump-dom", printed))
            if "matching run" in opened:
                break
        assert "Run Name" in opened and "Detect Issues" not in opened, opened[:3000]
        assert f" {shown.sum()} matching runs" in opened, opened[opened.find("matching run") - 300:][:400]
        header = opened[opened.find("Run Name"):opened.find("Hide run")]  # ag-grid renders the columns in view
        assert "Metrics" in header and all(name in header for name in ("token_iou", "token_recall", "recall")), header
        page = f"{base}/#/experiments/{experiment_id}/runs?searchFilter=tags.%60ragsweep.role%60%20%3D%20%27job%27"
        for _ in range(5):  # a cold server can answer the page before its first search returns
            text = _text(_browser(tmp_path, "--dump-dom", page))
            if "matching runs" in text:
                break
        assert "Experiments ragsweep" in text  # the breadcrumb
        # every job run, found by the UI's own search, which lists each with its parent sweep run
        assert f" {len(runs)} matching runs" in text, text[text.find("matching runs") - 300:][:400]
        assert "sweep:quick" in text  # the parent run, with its jobs nested under it
        # the latest sweep's ranking is the experiment's description, shown above the runs as the page opens
        assert re.search(r"Latest sweep \([\w:]+, [\d-]+ [\d:]+, parent run \w+\): top \d+ of \d+ configurations by "
                         r"\w+ rank config status", text), text[:3000]
        ARTIFACTS.mkdir(exist_ok=True)
        _browser(tmp_path, f"--screenshot={ARTIFACTS / 'mlflow_ui.png'}", page)
        assert (ARTIFACTS / "mlflow_ui.png").stat().st_size > 10_000
        for width, height in ((1400, 900), (1920, 1080)):  # the printed link, as a laptop and a monitor show it
            shot = ARTIFACTS / f"mlflow_ui_runs_{width}x{height}.png"
            _browser(tmp_path, f"--screenshot={shot}", printed, f"--window-size={width},{height}")
            assert shot.stat().st_size > 10_000
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def _browser(tmp_path: Path, action: str, url: str, *flags: str) -> str:
    """Chromium's answer; a browser that crashed (killed by a signal, as headless chromium now and then is on a
    loaded machine) is started once more, a fresh profile each time."""
    for _ in range(2):
        profile = tmp_path / f"chromium-{time.monotonic_ns()}"
        done = subprocess.run([CHROMIUM, *BROWSER_FLAGS, *flags, f"--user-data-dir={profile}", action, url],
                              capture_output=True, text=True, timeout=120)
        if done.returncode >= 0:
            break
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _text(dom: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style).*?</\1>", "", dom, flags=re.S)))


def _wait_for(url: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.5)
