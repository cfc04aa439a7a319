"""`ragsweep best`, `report` and `gate` on real runs corrected by people's labels: the corrected paired difference
each prints equals the one worked out here from the runs' own files by the formula of metrics/corrected.py.

One real sweep of two jobs (module fixture, under a minute): `judge=embedding` scores the answers of
`generator=extractive` (a retrieved sentence: every claim word for word in a passage) and of a user's own
generator that echoes the question as a statement (found in no passage), so the two differ on every question.
A first job in another experiment tells the judge's name as labels carry it; people's labels then record
that judge's scores of seven claims, which correct both runs alike.
"""

from __future__ import annotations

import html
import json
import math
import os
import statistics
import sys
from pathlib import Path

import pytest

from ragsweep import cli
from ragsweep.tracking.mlflow_tracker import MlflowTracker
from ragsweep.tracking.runs import finished_jobs
from ragsweep.tracking.table import param, tag
from tests.results.native import write_native_dataset
from tests.preloaded import run_command

pytestmark = pytest.mark.slow
TEXTS = {"bridge": "The Harbour Bridge was opened in 1932 by the mayor. It carries eight lanes of traffic.",
         "river": "The river freezes every January. Ferries stop running until the ice melts in March.",
         "library": "The city library holds two million books. It was founded in 1851 by a merchant."}
QUESTIONS = [("bridge", "When was the Harbour Bridge opened?", "1932"), ("river", "When does the ice melt?", "in March"),
             ("river", "When does the river freeze?", "every January"),
             ("library", "Who founded the library?", "a merchant")]
# (judge score, people's label): supported claims score higher, one unsupported one as high as 0.7
LABELLED = [(0.3, 0), (0.5, 0), (0.6, 0), (0.7, 0), (0.95, 1), (1.0, 1), (1.0, 1)]
ECHO = "def echo(question, passages):\n    return question.rstrip('?') + '.'\n"
ECHO_YAML = ("_target_: ragsweep.generation.own.OwnGenerator\ncomponent:\n  _target_: hydra.utils.get_method\n"
             "  path: echo_answers.echo\nname: echo\n")
SWEEP = ("generator=extractive,echo", "k=2", "judge=embedding", "dataset=native", "dataset.path=data")
Z95 = 1.959963984540054


def _sweep(project: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}  # entry points set them
    done = run_command([sys.executable, "sweep.py", *args], cwd=project, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def project(tmp_path_factory, scratch_project) -> Path:
    folder = scratch_project(tmp_path_factory.mktemp("corrected"))
    write_native_dataset(folder, TEXTS, QUESTIONS)
    (folder / "echo_answers.py").write_text(ECHO)  # sweep.py's folder is on the jobs' path
    (folder / "conf" / "generator" / "echo.yaml").write_text(ECHO_YAML)
    _sweep(folder, "generator=echo", *SWEEP[1:], "experiment=probe")
    judge = set(finished_jobs(_tracker(folder, "probe"))[tag("ragsweep.judge")])
    assert len(judge) == 1 and next(iter(judge)).startswith("EmbeddingJudge:")
    lines = [{"id": "q0", "claim": f"a claim people read {n}", "label": label, "judge": next(iter(judge)),
              "judge_score": score, "inclusion": 1.0, "generator": "extractive"}
             for n, (score, label) in enumerate(LABELLED)]
    (folder / "labels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    _sweep(folder, "-m", *SWEEP, f"judge.labels={folder / 'labels.jsonl'}")
    return folder


def _tracker(project: Path, experiment: str = "ragsweep") -> MlflowTracker:
    mlruns = project / "mlruns"
    return MlflowTracker(f"sqlite:///{mlruns / 'mlflow.db'}", experiment, str(mlruns / "artifacts"))


@pytest.fixture(scope="module")
def runs(project) -> dict[str, dict]:
    """Per generator: the run's id, label, per-question groundedness and metrics.json."""
    tracker = _tracker(project)
    jobs = finished_jobs(tracker)
    found = {}
    for (_, job), label in zip(jobs.iterrows(), jobs["label"], strict=True):
        folder = project / "downloads" / job.run_id
        files = [Path(tracker.client().download_artifacts(job.run_id, name, str(folder)))
                 for name in ("per_query.jsonl", "metrics.json")]
        records = [json.loads(line) for line in files[0].read_text().splitlines()]
        found[job[param("generator")]] = {"run_id": job.run_id, "label": label, "summary": json.loads(files[1].read_text()),
                                          "groundedness": {r["id"]: r["metrics"]["groundedness"] for r in records}}
    assert sorted(found) == ["echo", "extractive"]
    return found


def _by_hand(a: dict[str, float], b: dict[str, float]) -> tuple[float, float]:
    """A − B on groundedness and its 95% half-width: (mean(a − b) / J, z √((s²_D / Q + D² (V0 + V1)) / J²)),
    mu_k and V_k = s²/n_k the mean and squared standard error of the labelled claims' scores of class k."""
    scores = [[score for score, label in LABELLED if label == k] for k in (0, 1)]
    separation = statistics.mean(scores[1]) - statistics.mean(scores[0])
    spread = sum(statistics.variance(s) / len(s) for s in scores)
    differences = [a[q] - b[q] for q in a]
    value = statistics.mean(differences) / separation
    variance = (statistics.variance(differences) / len(differences) + value**2 * spread) / separation**2
    return value, Z95 * math.sqrt(variance)


def _line(first: str, second: str, value: float, half: float) -> str:
    return (f"{first} − {second} on groundedness = {value:.2f} ± {half:.2f} with {len(LABELLED)} labels "
            "(corrected by people's labels)")


def test_the_runs_share_the_error_rates_the_labels_measure(runs):
    scores = [[score for score, label in LABELLED if label == k] for k in (0, 1)]
    for run in runs.values():
        rates = run["summary"]["groundedness_corrected"]["error_rates"]
        assert (rates["mu0"], rates["mu1"]) == (pytest.approx(0.525), pytest.approx(statistics.mean(scores[1])))
    assert all(0.4 < value < 0.85 for value in runs["echo"]["groundedness"].values())  # the question is no passage's
    assert all(value == pytest.approx(1.0) for value in runs["extractive"]["groundedness"].values())


def test_best_ranks_by_the_corrected_value_and_prints_the_corrected_difference(project, runs):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}
    done = run_command([sys.executable, "-m", "ragsweep.cli", "best", "--metric", "groundedness", "--name",
                           "corrected"], cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    winner, runner_up = runs["extractive"], runs["echo"]
    assert ("Top 2 of 2 configurations by groundedness_corrected (their groundedness corrected by people's labels)"
            in done.stdout)
    header = next(line for line in done.stdout.splitlines() if line.startswith("| rank "))
    assert [cell.strip() for cell in header.strip("|").split("|")][4:6] == ["judge", "groundedness_corrected"]
    value, half = _by_hand(winner["groundedness"], runner_up["groundedness"])
    assert _line(winner["label"], runner_up["label"], value, half) in done.stdout
    manifest = json.loads((project / "conf" / "best" / "corrected.manifest.json").read_text())
    assert manifest["metric"] == "groundedness" and manifest["run_id"] == winner["run_id"]
    assert manifest["corrected"]["groundedness_corrected"] == winner["summary"]["groundedness_corrected"]


def test_the_report_tests_the_winner_by_the_corrected_difference(project, runs, capsys):
    output = project / "reports" / "corrected.html"
    assert cli.main(["--project", str(project), "report", "--metric", "groundedness", "--output", str(output)]) == 0
    page = output.read_text()
    winner, runner_up = runs["extractive"], runs["echo"]
    value, half = _by_hand(winner["groundedness"], runner_up["groundedness"])
    assert f"<td>[{value - half:.4f}, {value + half:.4f}]</td>" in page
    assert "<th>labels</th>\n      <th>verdict</th>" in page and "<td>7</td>\n      <td>better (corrected)</td>" in page
    assert html.escape(_line(winner["label"], runner_up["label"], value, half)) in page
    for run in runs.values():  # the judged table: each run's corrected estimate, its interval and its labels
        low, high = run["summary"]["groundedness_corrected"]["ci95"]
        assert f"<td>[{low:.4f}, {high:.4f}]</td>" in page
    assert "<th>groundedness_corrected 95% CI</th>" in page and "<th>groundedness_corrected labels</th>" in page


def test_the_gate_judges_the_drop_by_the_corrected_difference_and_names_the_labels(project, runs, capsys):
    baseline = str(project / "conf" / "best" / "corrected.yaml")
    if not Path(baseline).is_file():  # written by the best test; its own export when run alone
        assert cli.main(["--project", str(project), "best", "--metric", "groundedness", "--name", "corrected"]) == 0
    capsys.readouterr()
    gate = ["--project", str(project), "gate", "--baseline", baseline, "--metrics", "groundedness", "--run"]
    assert cli.main([*gate, runs["echo"]["run_id"], "--allow-other-config"]) == 1
    out, err = capsys.readouterr()
    value, half = _by_hand(runs["echo"]["groundedness"], runs["extractive"]["groundedness"])
    assert _line("current", "baseline", value, half) in out
    header, _, row = [line for line in out.splitlines() if line.startswith("|")][:3]
    cells = dict(zip(*([cell.strip() for cell in line.strip("|").split("|")] for line in (header, row)), strict=True))
    assert cells["labels"] == str(len(LABELLED)) and float(cells["change"]) == pytest.approx(value, abs=1e-4)
    assert cells["recorded"] == str(round(runs["extractive"]["summary"]["groundedness_corrected"]["value"], 4))
    assert "groundedness" in err and "dropped more than 5%, worse at p < 0.05" in err
    assert cli.main([*gate, runs["extractive"]["run_id"]]) == 0  # the baseline's own run: no difference at all
    out, _ = capsys.readouterr()
    assert _line("current", "baseline", 0.0, 0.0).replace("0.00", "0.0000") in out and "gate passed" in out
    unlabelled = finished_jobs(_tracker(project, "probe")).run_id.item()  # the same judge, no labels: the bootstrap
    assert cli.main([*gate, unlabelled, "--allow-other-config"]) == 1
    out, _ = capsys.readouterr()
    assert ("groundedness: gated by the paired bootstrap on the judge's values; current has no groundedness_corrected "
            "(run it with judge.labels=FILE): no corrected difference") in out and "| labels" not in out
