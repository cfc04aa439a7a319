"""The only module that writes to MLflow: a sweep's parent run and one child run per job.

SQLite stores race when parallel jobs create experiments or runs they both expect to exist, so a
multirun creates its experiment and parent run once, in the main process, and hands the parent's id
to the jobs (`parent_run_id`).
"""

from __future__ import annotations

import logging
import os
import socket
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from ragsweep.tracking.traces import log_dataset, log_traces

log = logging.getLogger(__name__)

FINGERPRINT_TAG = "ragsweep.config_fingerprint"
ROLE_TAG = "ragsweep.role"  # "parent" for a sweep's run, "job" for a configuration's
PARENT_RUN_FILE = ".mlflow_parent_run_id"  # in the sweep folder


def parent_run_id() -> str | None:
    """The MLflow parent run of the sweep this job belongs to; None outside a sweep.

    Read from the sweep folder, where the launching process writes it: every launcher's jobs see
    that folder, including parallel workers forked before the parent run existed (runner.workers).
    """
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        return None
    path = Path(HydraConfig.get().sweep.dir) / PARENT_RUN_FILE
    if not path.is_file():
        return None
    return path.read_text().strip() or None


class MlflowTracker:
    """Logs params, tags, metrics and artifacts of one run to an MLflow store.

    A run that raises is closed as FAILED, with its traceback as the artifact `traceback.txt`,
    before the error propagates, so no run is left RUNNING by a live process; one stopped by Ctrl-C
    (KeyboardInterrupt) is closed as KILLED, keeping what it logged. Runs carry their
    host, pid and process start time, so a later sweep can tell which RUNNING runs lost their
    process (`kill -9`) and mark them KILLED.

    Args:
        uri: Tracking URI, e.g. `sqlite:///<root>/mlruns/mlflow.db` (MLflow 3 refuses a plain ./mlruns).
        experiment: Experiment name; created with `artifacts` as its artifact root if missing.
        artifacts: Folder for run artifacts.
        trace_queries: Questions logged as MLflow traces per run with a generator (>= 0; 0 logs none).
            Changes what is logged, not a result, so it is not part of a configuration's fingerprint.
    """

    def __init__(self, uri: str, experiment: str, artifacts: str, trace_queries: int = 20) -> None:
        if not isinstance(trace_queries, int) or isinstance(trace_queries, bool) or trace_queries < 0:
            raise ValueError(f"tracking.trace_queries must be an integer >= 0, got {trace_queries!r}")
        self.uri = _absolute(uri)
        self.experiment = experiment
        self.artifacts = artifacts
        self.trace_queries = trace_queries
        self._traces_pending = False

    def client(self):
        import mlflow

        if self.uri.startswith("sqlite:///"):
            Path(self.uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        mlflow.set_tracking_uri(self.uri)
        return mlflow.MlflowClient(self.uri)

    def experiment_id(self) -> str:
        """The experiment's id, creating it on first use (call once per sweep, before parallel jobs start)."""
        known = _EXPERIMENT_IDS.get((self.uri, self.experiment))
        if known is not None:
            return known
        client = self.client()
        experiment = client.get_experiment_by_name(self.experiment)
        if experiment is None:
            Path(self.artifacts).mkdir(parents=True, exist_ok=True)
            experiment_id = client.create_experiment(self.experiment, Path(self.artifacts).resolve().as_uri())
        else:
            experiment_id = experiment.experiment_id
        _EXPERIMENT_IDS[(self.uri, self.experiment)] = experiment_id
        return experiment_id

    @contextmanager
    def start_run(self, name: str, params: dict[str, Any], tags: dict[str, str],
                  parent_run_id: str | None = None) -> Iterator[str]:
        import mlflow
        from mlflow.entities import Param

        experiment_id = self.experiment_id()
        tags = {**tags, **_process_tags(), ROLE_TAG: "job"}
        if parent_run_id:
            tags["mlflow.parentRunId"] = parent_run_id
        # MLflow's context manager closes the run as FAILED when the body raises, FINISHED otherwise,
        # unless the body has ended the run already (KILLED on Ctrl-C).
        with mlflow.start_run(experiment_id=experiment_id, run_name=name, tags=tags) as run:
            try:
                # params first, in one batch, so even a run that fails shows which config it was
                params = [Param(key, _param_value(value)) for key, value in params.items()]
                self.client().log_batch(run.info.run_id, params=params)
                try:
                    yield run.info.run_id
                finally:
                    self._flush_traces()  # before the run closes, even a failed one
            except KeyboardInterrupt:
                mlflow.end_run("KILLED")  # stopped, not broken: no traceback, and a rerun runs it again
                raise
            except BaseException:
                mlflow.log_text(traceback.format_exc(), "traceback.txt")
                raise

    def log_metrics(self, metrics: dict[str, float]) -> None:
        """All metrics in one batch: one database transaction, not one per metric call."""
        import mlflow
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        batch = [Metric(key, float(value), stamp, 0) for key, value in metrics.items()]
        self.client().log_batch(mlflow.active_run().info.run_id, metrics=batch)

    def log_dataset(self, name: str, fingerprint: str, source: str, queries: int) -> None:
        """Log the dataset (name, fingerprint as digest, source; metadata only) as the active run's input,
        which MLflow's UI shows in the runs table's Dataset column."""
        import mlflow

        log_dataset(mlflow.active_run().info.run_id, name, fingerprint, source, queries)

    def log_query_traces(self, traces: Sequence[dict]) -> int:
        """Log the first `trace_queries` questions as MLflow traces of the active run; how many were logged.

        Each record is `{"id", "question", "answer", "error", "spans": [{"name", "span_type", "inputs",
        "outputs", "ms"}]}` (see `ragsweep.tracking.traces`). They are written in the background
        and flushed before the run ends.
        """
        import mlflow

        chosen = list(traces[: self.trace_queries])
        if not chosen:
            return 0
        run = mlflow.active_run()
        self._traces_pending = True
        return log_traces(chosen, run.info.run_id, run.info.experiment_id)

    def _flush_traces(self) -> None:
        if self._traces_pending:
            import mlflow

            mlflow.flush_trace_async_logging()
            self._traces_pending = False

    def log_artifacts(self, *paths: Path) -> None:
        """Copy files into the active run's artifacts through one repository (not one lookup per file)."""
        import mlflow
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

        repository = get_artifact_repository(mlflow.active_run().info.artifact_uri)
        for path in paths:
            repository.log_artifact(str(path))

    def finished_run(self, config_fingerprint: str):
        """The newest FINISHED job run with this config fingerprint in the experiment, or None."""
        runs = self.client().search_runs(
            [self.experiment_id()],
            filter_string=f"tags.`{FINGERPRINT_TAG}` = '{config_fingerprint}' and attributes.status = 'FINISHED'",
            order_by=["attributes.start_time DESC"], max_results=1,
        )
        return runs[0] if runs else None

    def start_parent(self, name: str, tags: dict[str, str]) -> str:
        """A RUNNING parent run for a sweep; its jobs attach to it as children."""
        run = self.client().create_run(self.experiment_id(), run_name=name,
                                       tags={**tags, **_process_tags(), ROLE_TAG: "parent"})
        return run.info.run_id

    def end_parent(self, run_id: str, status: str, tags: dict[str, str], files: list[Path]) -> None:
        client = self.client()
        for key, value in tags.items():
            client.set_tag(run_id, key, value)
        for path in files:
            client.log_artifact(run_id, str(path))
        client.set_terminated(run_id, status)

    def attach_to_latest_sweep(self, path: Path) -> str | None:
        """Log `path` to the experiment's newest parent run; its id, or None when no sweep ran."""
        client = self.client()
        parents = client.search_runs([self.experiment_id()], f"tags.`{ROLE_TAG}` = 'parent'",
                                     order_by=["attributes.start_time DESC"], max_results=1)
        if not parents:
            return None
        client.log_artifact(parents[0].info.run_id, str(path))
        return parents[0].info.run_id

    def note_reused(self, parent_run_id: str, config_fingerprint: str, run_id: str) -> None:
        """Record on the parent that a skipped job's result is the finished run `run_id` (one tag per job)."""
        self.client().set_tag(parent_run_id, f"ragsweep.reused.{config_fingerprint[:16]}", run_id)

    def kill_running_children(self, parent_run_id: str, wait_s: float = 10.0) -> list[str]:
        """Mark KILLED the parent's RUNNING child runs once their processes have exited (at most `wait_s`).

        For an interrupted sweep: a job closes its own run KILLED on Ctrl-C, but a parallel worker
        can be stopped by its pool before it does. Waiting first keeps a job that is still closing
        its run from overwriting the status afterwards.
        """
        client = self.client()
        running = client.search_runs(
            [self.experiment_id()],
            f"tags.mlflow.parentRunId = '{parent_run_id}' and attributes.status = 'RUNNING'", max_results=10_000)
        deadline = time.monotonic() + wait_s
        killed = []
        for run in running:
            tags = run.data.tags
            while tags.get("ragsweep.pid") != str(os.getpid()) and time.monotonic() < deadline \
                    and _alive(tags.get("ragsweep.pid"), tags.get("ragsweep.started")):
                time.sleep(0.1)
            if client.get_run(run.info.run_id).info.status == "RUNNING":
                client.set_terminated(run.info.run_id, "KILLED")
                killed.append(run.info.run_id)
        return killed

    def kill_orphans(self) -> list[str]:
        """Mark KILLED the RUNNING runs started on this host by processes that no longer exist."""
        client = self.client()
        host = socket.gethostname()
        orphans = []
        for run in client.search_runs([self.experiment_id()], "attributes.status = 'RUNNING'", max_results=10_000):
            tags = run.data.tags
            if tags.get("ragsweep.host") == host and not _alive(tags.get("ragsweep.pid"), tags.get("ragsweep.started")):
                client.set_terminated(run.info.run_id, "KILLED")
                orphans.append(run.info.run_id)
        if orphans:
            log.warning("marked %d run(s) KILLED: their processes are gone (%s)", len(orphans), ", ".join(orphans))
        return orphans


_EXPERIMENT_IDS: dict[tuple[str, str], str] = {}  # (uri, name) -> id, for the many runs of one process


def _absolute(uri: str) -> str:
    """A sqlite URI made absolute, so the store does not move with the working directory."""
    if not uri.startswith("sqlite:///"):
        return uri
    return f"sqlite:///{Path(uri.removeprefix('sqlite:///')).resolve()}"


def _process_tags() -> dict[str, str]:
    process = psutil.Process()
    return {"ragsweep.host": socket.gethostname(), "ragsweep.pid": str(process.pid),
            "ragsweep.started": repr(process.create_time())}


def _alive(pid: str | None, started: str | None) -> bool:
    """True when the process that tagged a run still runs (same pid and start time, so not a reused pid)."""
    if not pid or not started:
        return True  # not ours to judge
    try:
        return repr(psutil.Process(int(pid)).create_time()) == started
    except (psutil.NoSuchProcess, ValueError):
        return False


def _param_value(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 6000 else text[:5997] + "..."  # MLflow's param length limit
