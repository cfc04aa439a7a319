"""A real race (`hydra/sweeper=racing`) on the embedded dataset, read back from MLflow, then run again."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.preloaded import run_command

ROOT = Path(__file__).resolve().parents[3]
RACE = ["-m", "hydra/sweeper=racing", "k=1,10", "generator=extractive",
        "hydra.sweeper.racing.metric=recall", "hydra.sweeper.racing.schedule=[0.25,0.5,1.0]"]


def _sweep(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}
    return run_command([sys.executable, str(ROOT / "sweep.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def _client(cwd: Path):
    import mlflow

    return mlflow.MlflowClient(f"sqlite:///{cwd}/mlruns/mlflow.db")


def _runs(cwd: Path, role: str):
    client = _client(cwd)
    experiment = client.get_experiment_by_name("ragsweep").experiment_id
    return client.search_runs([experiment], f"tags.`ragsweep.role` = '{role}'",
                              order_by=["attributes.start_time ASC"])


@pytest.fixture(scope="module")
def raced(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, subprocess.CompletedProcess, dict]:
    cwd = tmp_path_factory.mktemp("race")
    first = _sweep(cwd, *RACE)
    assert first.returncode == 0, first.stderr[-3000:]
    jobs = {run.info.run_id: run.data.tags for run in _runs(cwd, "job")}
    for run_id in jobs:  # as a kill leaves them once their rounds were logged (the next sweep marks them KILLED)
        _client(cwd).set_terminated(run_id, "KILLED")
    again = _sweep(cwd, *RACE)
    assert again.returncode == 0, again.stderr[-3000:]
    return cwd, first, again, jobs


def test_one_run_per_configuration_extended_each_round(raced):
    import mlflow

    cwd, first, _, _ = raced
    client = _client(cwd)
    mlflow.set_tracking_uri(f"sqlite:///{cwd}/mlruns/mlflow.db")
    jobs = _runs(cwd, "job")
    assert sorted(run.info.run_name for run in jobs) == ["generator=extractive,k=1", "generator=extractive,k=10"]
    assert {run.info.status for run in jobs} == {"FINISHED"}
    for run in jobs:
        steps = [m.step for m in client.get_metric_history(run.info.run_id, "recall")]
        questions = int(run.data.tags["ragsweep.race.questions"])
        assert steps[0] == 17 and steps == sorted(set(steps)) and set(steps) <= {17, 34, 68}  # a lone survivor
        assert steps[-1] == questions                                                         # skips to the end
        assert run.data.tags["ragsweep.race.stopped_round"] in {"none", "1", "2"}
        ran_all = questions == 68
        assert ("ragsweep.config_fingerprint" in run.data.tags) == ran_all  # only then a plain sweep reuses it
        assert ("ragsweep.race.stopped" in run.data.tags) == (not ran_all)
        # traced once, in the round of every question, as a plain run is (20 questions); not again each round
        traces = mlflow.search_traces(locations=[run.info.experiment_id], run_id=run.info.run_id, return_type="list")
        assert len(traces) == (20 if ran_all else 0)
    winners = [run for run in jobs if run.data.tags["ragsweep.race.winner"] == "true"]
    assert len(winners) == 1 and winners[0].data.tags["ragsweep.race.questions"] == "68"
    assert "Race on recall: winner" in first.stdout


def test_each_question_is_retrieved_and_answered_once_per_configuration(raced):
    """Rounds extend the first stage shard by shard and reuse every earlier answer: a round computes only the
    questions it adds (the cache counts of each round, logged at its step)."""
    cwd, *_ = raced
    client = _client(cwd)
    retrieved = 0
    for run in _runs(cwd, "job"):
        history = {name: {m.step: m.value for m in client.get_metric_history(run.info.run_id, name)}
                   for name in ("cache_misses_retrieval", "cache_hits_retrieval", "cache_misses_answers",
                                "cache_hits_answers")}
        steps = sorted(history["cache_misses_answers"])
        for before, step in zip([0, *steps], steps):
            count = history["cache_misses_answers"][step]
            assert count <= step - before
            assert count + history["cache_hits_answers"][step] == step  # the earlier answers all from the cache
            assert history["cache_misses_retrieval"][step] + history["cache_hits_retrieval"][step] == \
                [17, 34, 68].index(step) + 1  # one first-stage entry per shard
        retrieved += sum(history["cache_misses_retrieval"].values())
    assert retrieved == 3  # one chunking: three shards, each searched once for both values of k


def test_later_rounds_continue_the_configurations_kept_in_the_sweeping_process(raced):
    """Hydra launches the first round only (one job folder a configuration); each later round of a survivor runs
    in the pipeline its first round built, and logs into its own job's folder."""
    cwd, first, _, _ = raced
    output = first.stdout + first.stderr
    assert len(re.findall(r"\t#\d+ : ", output)) == 2
    continued = re.findall(r"\tcontinued: (.+)", output)
    race = json.loads(Path(_client(cwd).download_artifacts(_runs(cwd, "parent")[0].info.run_id, "race.json",
                                                          str(cwd))).read_text())
    assert len(continued) == sum(len(r["survivors"]) for r in race["rounds"][:-1]) >= 1
    first_sweep = sorted((cwd / "outputs" / "multirun").iterdir())[0]  # the fixture's second race has its own
    folders = sorted(path.parent for path in first_sweep.glob("*/.hydra"))
    assert [folder.name for folder in folders] == ["0", "1"]
    for folder in folders:
        overrides = {line.removeprefix("- ") for line in (folder / ".hydra" / "overrides.yaml").read_text().split("\n")}
        log = next(folder.glob("*.log")).read_text()  # Hydra's job log, named after the entry point
        rounds = sum(1 for line in log.splitlines() if "[ragsweep.runner.job][INFO] - " in line and " recall=" in line)
        assert rounds == 1 + sum(set(point.split()) <= overrides for point in continued)  # its rounds, no other's


def test_the_parent_run_holds_the_race(raced):
    cwd, first, _, _ = raced
    client = _client(cwd)
    parent = _runs(cwd, "parent")[0]
    assert parent.data.tags["ragsweep.race.metric"] == "recall"
    assert int(parent.data.tags["ragsweep.race.full_grid_evaluations"]) == 2 * 68
    path = client.download_artifacts(parent.info.run_id, "race.json", str(cwd))
    race = json.loads(Path(path).read_text())
    rounds = [r["questions"] for r in race["rounds"]]
    assert rounds[0] == 17 and rounds[-1] == 68 and set(rounds) <= {17, 34, 68}
    assert race["evaluations"] == sum(race["questions"].values())
    assert race["winner"] in race["rounds"][-1]["survivors"]


def test_the_same_race_run_again_computes_nothing(raced):
    """A race run again after a kill finds each configuration's rounds it logged whole and recomputes none; the
    race closes their runs FINISHED again."""
    cwd, _, again, jobs = raced
    output = again.stdout + again.stderr
    launched = len(re.findall(r"\t#\d+ : |\tcontinued: ", output))  # through Hydra, or kept in the process
    assert launched >= 2 and output.count("already ran its first") == launched
    assert "answers:" not in output  # no job got as far as generating
    now = {run.info.run_id: run for run in _runs(cwd, "job")}
    assert set(now) == set(jobs)  # no new run: each configuration's race run was found again
    parents = _runs(cwd, "parent")
    assert len(parents) == 2
    assert {run.data.tags["mlflow.parentRunId"] for run in now.values()} == {parents[1].info.run_id}


def test_best_ranks_the_race_winner_and_verify_reruns_it(raced):
    cwd, *_ = raced
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}
    best = run_command([sys.executable, "-m", "ragsweep.cli", "best", "--metric", "recall", "--verify"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)
    assert best.returncode == 0, best.stderr[-3000:]
    winner = next(run for run in _runs(cwd, "job") if run.data.tags["ragsweep.race.winner"] == "true")
    assert f"(run {winner.info.run_id})" in (cwd / "conf" / "best" / "ragsweep.yaml").read_text()
    assert "\nrace:" not in (cwd / "conf" / "best" / "ragsweep.yaml").read_text()  # it reruns every question
    assert "verified: every metric of the rerun equals the recorded run" in best.stdout
    stopped = 0
    for run in _runs(cwd, "job"):  # a stopped configuration is listed, not ranked, and not gated
        if "ragsweep.race.stopped" in run.data.tags:
            stopped += 1
            assert f"{run.info.run_name}: {run.data.tags['ragsweep.race.stopped']}" in best.stdout
            gate = run_command([sys.executable, "-m", "ragsweep.cli", "gate", "--baseline", "conf/best/ragsweep.yaml",
                                   "--run", run.info.run_id, "--allow-other-config"], cwd=cwd, env=env,
                                  capture_output=True, text=True, timeout=600)
            assert gate.returncode == 2 and gate.stderr.count("\n") == 1, gate.stderr
            assert (f"was stopped in a race after {run.data.tags['ragsweep.race.questions']} questions; gate a run "
                    "that ran every question") in gate.stderr
    assert stopped == 1


def test_only_a_launcher_that_runs_jobs_in_the_sweeping_process_has_them_kept():
    """The basic launcher and ragsweep's (built on it) run a job here, so a race keeps it between rounds; joblib's
    and Ray's run jobs in other processes, whose rounds are launched again; a point setting Hydra's own settings
    is launched every round, so its settings apply."""
    from hydra._internal.core_plugins.basic_launcher import BasicLauncher
    from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher
    from hydra_plugins.hydra_ray_launcher.ray_launcher import RayLauncher

    from hydra_plugins.ragsweep_grid.launcher import RagsweepLauncher
    from hydra_plugins.ragsweep_racing.racing_sweeper import _runs_jobs_here, _sets_hydra

    kept = [_runs_jobs_here(object.__new__(launcher))
            for launcher in (BasicLauncher, RagsweepLauncher, JoblibLauncher, RayLauncher)]
    assert kept == [True, True, False, False]
    assert _sets_hydra(["k=3", "hydra.job.env_set.OMP_NUM_THREADS=1"]) and not _sets_hydra(["k=3", "+cutoff.margin=1"])
