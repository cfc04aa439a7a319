"""A tracking server that goes away: MLflow's retries ride out a short outage, and a job whose server
stays away keeps its results for `ragsweep sync`. Real `ragsweep server` processes (SQLite store here;
PostgreSQL in tests/cluster) on 127.0.0.1, stopped and restarted on the same port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ragsweep.tracking.mlflow_tracker import MlflowTracker
from ragsweep.tracking.record import RECORD_FILE
from tests.cluster.services import MlflowServer, free_port, wait_for
from tests.preloaded import run_command

ROOT = Path(__file__).resolve().parents[2]


def _server(tmp_path: Path, port: int) -> MlflowServer:
    return MlflowServer(f"sqlite:///{tmp_path / 'store.db'}", tmp_path / "server", port)


def test_logging_waits_out_a_short_outage(tmp_path, monkeypatch):
    """The server is stopped after the run starts and back 4 s later; the metrics call, made while it is
    down, retries with backoff and lands: nothing is lost and nothing is left for sync."""
    port = free_port()
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "7")  # restored after the test; the tracker sets it
    with _server(tmp_path, port) as server:
        tracker = MlflowTracker(server.uri, "outage", str(tmp_path / "unused"), http_retries=5)
        with tracker.start_run("job", {"k": 3}, {}, record_dir=tmp_path / "job") as run_id:
            server.__exit__()
            back = threading.Timer(4.0, server.__enter__)
            back.start()
            started = time.monotonic()
            tracker.log_metrics({"token_iou": 0.25})
            waited = time.monotonic() - started
            back.join()
        run = tracker.client().get_run(run_id)
    assert waited >= 3.0  # it was down when the call was made
    assert run.info.status == "FINISHED" and run.data.metrics == {"token_iou": 0.25}
    assert json.loads((tmp_path / "job" / RECORD_FILE).read_text())["unsent"] == []


@pytest.mark.slow
def test_a_job_the_server_refuses_keeps_its_results_and_sync_logs_them(tmp_path, scratch_project):
    project = scratch_project(tmp_path / "project")
    port = free_port()
    server = _server(tmp_path, port).__enter__()
    try:
        job = subprocess.Popen([sys.executable, "sweep.py", f"tracking.uri={server.uri}", "tracking.http_retries=0",
                                "experiment=offline", "chunker=fixed"], cwd=project, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        tracker = MlflowTracker(server.uri, "offline", str(tmp_path / "unused"))

        def running() -> bool:
            try:
                return bool(tracker.client().search_runs([tracker.experiment_id()], "attributes.status = 'RUNNING'"))
            except Exception:  # noqa: BLE001  (no experiment yet)
                return False

        wait_for(running, "the job's RUNNING run", 300)
        server.__exit__()  # gone for good while the job computes
        _, stderr = job.communicate(timeout=600)
    finally:
        server.__exit__()
    assert job.returncode == 1, stderr[-3000:]
    assert "ragsweep sync" in stderr.strip().splitlines()[-1], stderr[-3000:]
    folder = next((project / "outputs" / "runs").iterdir())
    record = json.loads((folder / RECORD_FILE).read_text())
    means = {name: values["mean"] for name, values in json.loads((folder / "metrics.json").read_text()).items()
             if isinstance(values, dict) and "mean" in values}
    assert record["unsent"] and means and all(record["metrics"][name] == mean for name, mean in means.items())

    sync = [sys.executable, "-m", "ragsweep.cli", "sync", str(folder)]
    refused = run_command(sync, project, {**os.environ, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}, timeout=300)
    assert refused.returncode == 1 and "the record is kept" in refused.stderr  # still down: nothing lost

    with _server(tmp_path, port):
        synced = run_command(sync, project, timeout=300)
        assert synced.returncode == 0, synced.stderr[-3000:]
        run = tracker.client().get_run(record["run_id"])  # the run the job had started, completed
        assert run.info.status == "FINISHED"
        assert {name: run.data.metrics[name] for name in means} == means
        names = {item.path for item in tracker.client().list_artifacts(run.info.run_id)}
        assert {"metrics.json", "per_query.jsonl", "config.yaml"} <= names
        again = run_command(sync, project, timeout=300)
        assert again.returncode == 0 and "already logged" in again.stdout
        assert len(tracker.client().search_runs([tracker.experiment_id()])) == 1


def test_a_server_on_a_database_that_does_not_answer_refuses_to_start(tmp_path, capsys):
    """`ragsweep server` connects to its database before starting MLflow: a closed port fails at once,
    with the reason and the fix, and without the password."""
    from ragsweep.cli import main

    port = free_port()  # nothing listens there
    code = main(["server", "--backend-store-uri", f"postgresql://mlflow:secret@127.0.0.1:{port}/mlflow",
                 "--artifacts-destination", str(tmp_path / "artifacts")])
    error = capsys.readouterr().err
    assert code == 2 and "cannot connect" in error and "createdb" in error
    assert "secret" not in error and "***" in error
