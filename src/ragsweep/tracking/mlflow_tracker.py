"""The only module that writes to MLflow: a sweep's parent run and one child run per job.

SQLite stores race when parallel jobs create experiments or runs they both expect to exist, so a
multirun creates its experiment and parent run once, in the main process, and hands the parent's id
to the jobs (`parent_run_id`).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import sys
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import psutil

from ragsweep.cache import exclusive
from ragsweep.tracking.traces import log_dataset, log_traces

log = logging.getLogger(__name__)

FINGERPRINT_TAG = "ragsweep.config_fingerprint"
LABEL_TAG = "ragsweep.config_label"  # how tables, plots and run names call a configuration: chunker=fixed,k=3
ROLE_TAG = "ragsweep.role"  # "parent" for a sweep's run, "job" for a configuration's
PARENT_RUN_ENV = "RAGSWEEP_PARENT_RUN_ID"  # set in each job's process through the job's config (hydra.job.env_set)
RERUN_ENV = "RAGSWEEP_RERUN"  # why this process reruns an export (verify, gate), tagged as RERUN_TAG
RERUN_TAG = "ragsweep.rerun"
RECORD_FILE = "mlflow_run.json"  # in a job's output folder: what its run logged (see RunRecord)
LOST_TAG = "ragsweep.lost"  # on a run marked KILLED because its process or node is gone


def sqlite_store_problem(database: Path) -> str | None:
    """Why an existing file cannot be an MLflow SQLite store (not SQLite, or unreadable); None when it can,
    or does not exist yet. MLflow's own error is a SQLAlchemy traceback that never names the file."""
    if not database.is_file():
        return None
    try:
        with closing(sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)) as connection:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as error:
        return (f"{database} is not a readable SQLite database ({error}); move it aside (a new store is made in "
                "its place) or point tracking.uri at another store")
    return None


def dotted_params(tree: Mapping[str, Any], prefix: str = "") -> dict[str, object]:
    """Nested settings as MLflow params: dotted keys (`chunker.size`, `embedder._target_`), lists as values."""
    flat: dict[str, object] = {}
    for key, value in tree.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        flat.update(dotted_params(value, name) if isinstance(value, Mapping) else {name: value})
    return flat


class MlflowTracker:
    """Logs params, tags, metrics and artifacts of one run to an MLflow store.

    A run that raises is closed as FAILED, with its traceback as the artifact `traceback.txt`,
    before the error propagates, so no run is left RUNNING by a live process; one stopped by Ctrl-C
    (KeyboardInterrupt) is closed as KILLED, keeping what it logged. Runs carry their
    host, pid, process start time and Ray node, so a later job or sweep can tell which RUNNING runs
    lost their process (`kill -9`) or node and mark them KILLED.

    Args:
        uri: Tracking URI, e.g. `sqlite:///<root>/mlruns/mlflow.db` (MLflow 3 refuses a plain ./mlruns).
        experiment: Experiment name; created with `artifacts` as its artifact root if missing.
        artifacts: Folder for run artifacts.
        trace_queries: Questions logged as MLflow traces per run with a generator (>= 0; 0 logs none).
            Changes what is logged, not a result, so it is not part of a configuration's fingerprint.
    """

    def __init__(self, uri: str, experiment: str, artifacts: str, trace_queries: int = 20,
                 http_retries: int | None = None) -> None:
        if not isinstance(trace_queries, int) or isinstance(trace_queries, bool) or trace_queries < 0:
            raise ValueError(f"tracking.trace_queries must be an integer >= 0, got {trace_queries!r}")
        self.uri = _absolute(uri)
        self.experiment = experiment
        self.artifacts = artifacts
        self.trace_queries = trace_queries
        if http_retries is not None:  # set in the job's own process: the launcher's environment does not reach Ray jobs
            os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = str(int(http_retries))
        self._traces_pending = False
        self._run = None  # the RunInfo of the run being logged
        self._record: RunRecord | None = None

    def client(self):
        import mlflow

        mlflow.set_tracking_uri(self.uri)
        if not self.uri.startswith("sqlite:///") or self.uri in _OPENED_STORES:
            return mlflow.MlflowClient(self.uri)
        Path(self.uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        with self._store_lock():  # a new store's tables are made by the first process; the others wait for them
            client = mlflow.MlflowClient(self.uri)
            client.search_experiments(max_results=1)
        _OPENED_STORES.add(self.uri)
        return client

    def _store_lock(self):
        """Across processes on this machine, one at a time creates a SQLite store's tables or an experiment in it
        (two sweeps started together raced in MLflow's migrations); no lock is needed on a tracking server."""
        database = Path(self.uri.removeprefix("sqlite:///"))
        if not self.uri.startswith("sqlite:///") or not os.access(database.parent, os.W_OK):
            return nullcontext()  # a read-only store is only read
        return exclusive(database.with_name(database.name + ".lock"))

    def experiment_id(self) -> str:
        """The experiment's id, creating it on first use (call once per sweep, before parallel jobs start).

        On a tracking server (http) the server keeps the artifacts (`mlflow server --artifacts-destination`,
        `ragsweep server`); on a local store they go to `artifacts`."""
        known = _EXPERIMENT_IDS.get((self.uri, self.experiment))
        if known is not None:
            return known
        client = self.client()
        with self._store_lock():
            experiment = client.get_experiment_by_name(self.experiment)
            if experiment is None and self.uri.startswith(("http://", "https://")):
                experiment_id = client.create_experiment(self.experiment)
            elif experiment is None:
                Path(self.artifacts).mkdir(parents=True, exist_ok=True)
                experiment_id = client.create_experiment(self.experiment, Path(self.artifacts).resolve().as_uri())
            else:
                experiment_id = experiment.experiment_id
        _EXPERIMENT_IDS[(self.uri, self.experiment)] = experiment_id
        return experiment_id

    @contextmanager
    def start_run(self, name: str, params: dict[str, Any], tags: dict[str, str],
                  parent_run_id: str | None = None, record_dir: Path | None = None) -> Iterator[str]:
        """A job's run: FINISHED when the body returns, FAILED (with `traceback.txt`) when it raises,
        KILLED on Ctrl-C.

        With `record_dir`, everything logged is also written to `record_dir/RECORD_FILE` first. When the
        store stops answering mid-run (after MLflow's own retries with backoff), the job goes on, the
        record keeps what was not logged, and the run ends with `TrackingUnavailable` naming the
        `ragsweep sync` command that logs it later.
        """
        experiment_id = self.experiment_id()
        tags = {**tags, **_process_tags(), ROLE_TAG: "job"}
        if parent_run_id:
            tags["mlflow.parentRunId"] = parent_run_id
            self._close_lost_attempts(parent_run_id, tags.get(FINGERPRINT_TAG))
        client = self.client()
        self._run = client.create_run(experiment_id, run_name=name, tags=tags).info
        self._record = RunRecord(record_dir, self.uri, self.experiment, self._run.run_id, name, tags,
                                 {key: _param_value(value) for key, value in params.items()})
        self._send("params", lambda: self._log_params(self._run.run_id, self._record.params))  # a failed run shows its config
        status = "FAILED"
        try:
            try:
                yield self._run.run_id
            finally:
                self._flush_traces()  # before the run closes, even a failed one
            status = "FINISHED"
        except KeyboardInterrupt:
            status = "KILLED"  # stopped, not broken: no traceback, and a rerun runs it again
            raise
        except BaseException:
            self._send("traceback", lambda: client.log_text(self._run.run_id, traceback.format_exc(), "traceback.txt"))
            raise
        finally:
            record, self._record = self._record, None
            self._send_with(record, "status", lambda: client.set_terminated(self._run.run_id, status))
            record.end(status)
            if record.unsent and status != "FINISHED":
                log.error("%s", record.advice())
        if record.unsent:
            raise TrackingUnavailable(record.advice())

    def log_metrics(self, metrics: dict[str, float]) -> None:
        """All metrics in one batch: one database transaction, not one per metric call."""
        metrics = {key: float(value) for key, value in metrics.items()}
        self._record.add("metrics", metrics)
        self._send("metrics", lambda: self._log_metrics(self._run.run_id, metrics))

    def log_dataset(self, name: str, fingerprint: str, source: str, queries: int) -> None:
        """Log the dataset (name, fingerprint as digest, source; metadata only) as the run's input,
        which MLflow's UI shows in the runs table's Dataset column."""
        dataset = {"name": name, "fingerprint": fingerprint, "source": source, "queries": queries}
        self._record.add("dataset", dataset)
        self._send("dataset", lambda: log_dataset(self._run.run_id, **dataset))

    def log_query_traces(self, traces: Sequence[dict]) -> int:
        """Log the first `trace_queries` questions as MLflow traces of the run; how many were logged.

        Each record is `{"id", "question", "answer", "error", "spans": [{"name", "span_type", "inputs",
        "outputs", "ms"}]}` (see `ragsweep.tracking.traces`). They are written in the background
        and flushed before the run ends. Not kept for `ragsweep sync`: traces illustrate a run, its
        metrics and per_query.jsonl are its results.
        """
        chosen = list(traces[: self.trace_queries])
        if not chosen or self._record.unsent:
            return 0
        self._traces_pending = True
        return log_traces(chosen, self._run.run_id, self._run.experiment_id)

    def _flush_traces(self) -> None:
        if self._traces_pending:
            import mlflow

            self._traces_pending = False
            self._send("traces", mlflow.flush_trace_async_logging)

    def log_artifacts(self, *paths: Path) -> None:
        """Copy files into the run's artifacts through one repository (not one lookup per file)."""
        self._record.add("artifacts", [str(path) for path in paths])
        self._send("artifacts", lambda: self._log_artifacts(self._run.artifact_uri, paths))

    def sync(self, record_path: Path) -> str:
        """Log a job's record (`ragsweep sync`): into its own run when the store has it, else into a new
        run under the same parent when that exists; its run id. A configuration that already has a
        FINISHED run in the experiment is not logged twice."""
        from mlflow.exceptions import MlflowException

        record = RunRecord.read(record_path)
        client = self.client()
        fingerprint = record.tags.get(FINGERPRINT_TAG)
        finished = self.finished_run(fingerprint) if fingerprint else None
        if finished is not None and finished.info.run_id != record.run_id:
            record.synced(finished.info.run_id)
            return finished.info.run_id
        try:
            run = client.get_run(record.run_id).info
        except MlflowException:  # made on another store, or never made
            tags = dict(record.tags)
            parent = tags.get("mlflow.parentRunId")
            if parent and not _exists(client, parent):
                tags.pop("mlflow.parentRunId")
            run = client.create_run(self.experiment_id(), run_name=record.name, tags=tags).info
            self._log_params(run.run_id, record.params)
        if record.dataset:
            log_dataset(run.run_id, **record.dataset)
        self._log_metrics(run.run_id, record.metrics)
        self._log_artifacts(run.artifact_uri, [Path(path) for path in record.artifacts])
        client.set_terminated(run.run_id, record.status if record.status != "RUNNING" else "FAILED")
        record.synced(run.run_id)
        return run.run_id

    def _send(self, what: str, call) -> None:
        self._send_with(self._record, what, call)

    def _send_with(self, record: RunRecord, what: str, call) -> None:
        """Make one logging call unless the store has already stopped answering in this run; a failure
        (after MLflow's retries) is noted in the record, which `ragsweep sync` replays."""
        if record.unsent:
            record.unsent.append(what)
            return
        try:
            call()
        except Exception as error:  # noqa: BLE001  (any store error: the results stay in the record)
            log.error("MLflow at %s did not take the run's %s (%s); logging the rest to %s only",
                      self.uri, what, error, record.path or "nowhere (no output folder)")
            record.unsent.append(what)

    def _log_params(self, run_id: str, params: dict[str, str]) -> None:
        from mlflow.entities import Param

        self.client().log_batch(run_id, params=[Param(key, value) for key, value in params.items()])

    def _log_metrics(self, run_id: str, metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        self.client().log_batch(run_id, metrics=[Metric(key, value, stamp, 0) for key, value in metrics.items()])

    def _log_artifacts(self, artifact_uri: str, paths: Sequence[Path]) -> None:
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

        self.client()
        repository = get_artifact_repository(artifact_uri)
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

    def describe_experiment(self, text: str) -> None:
        """Markdown shown as the experiment's description at the top of its page in MLflow's UI."""
        self.client().set_experiment_tag(self.experiment_id(), "mlflow.note.content", text)

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

    def _close_lost_attempts(self, parent_run_id: str, config_fingerprint: str | None) -> None:
        """Mark KILLED this configuration's RUNNING runs in this sweep whose process or node is gone: the
        job is starting again (Ray retries a task whose node died; a scheduler requeues a job)."""
        if config_fingerprint is None:
            return
        client = self.client()
        for run in client.search_runs(
                [self.experiment_id()],
                f"tags.mlflow.parentRunId = '{parent_run_id}' and tags.`{FINGERPRINT_TAG}` = '{config_fingerprint}' "
                "and attributes.status = 'RUNNING'"):
            if _alive(run.data.tags) is False:
                self._mark_lost(run.info.run_id, "its job started again after its process or node was lost")

    def kill_running_children(self, parent_run_id: str, wait_s: float = 10.0) -> list[str]:
        """Mark KILLED the parent's RUNNING child runs once their processes have exited (at most `wait_s`).

        For a sweep that ended or stopped: every job has returned, or was stopped, so a run still
        RUNNING lost its process (Ctrl-C stopped a parallel worker before it closed its run) or its
        node. Waiting first keeps a job that is still closing its run from overwriting the status.
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
                    and _alive(tags) is not False:
                time.sleep(0.1)
            if client.get_run(run.info.run_id).info.status == "RUNNING":
                self._mark_lost(run.info.run_id, "still RUNNING when its sweep ended: its process or node was lost")
                killed.append(run.info.run_id)
        return killed

    def kill_orphans(self) -> list[str]:
        """Mark KILLED the RUNNING runs that nothing will close: those whose process is known to be gone
        (this host's pids, a dead Ray node), and the jobs of sweeps that have ended."""
        client = self.client()
        running = client.search_runs([self.experiment_id()], "attributes.status = 'RUNNING'", max_results=10_000)
        orphans = [run.info.run_id for run in running if _alive(run.data.tags) is False]
        open_parents = {run.info.run_id for run in running if run.info.run_id not in orphans}
        for run in running:
            parent = run.data.tags.get("mlflow.parentRunId")
            if run.info.run_id not in orphans and parent and parent not in open_parents:
                orphans.append(run.info.run_id)
        for run_id in orphans:
            self._mark_lost(run_id, "RUNNING when a later sweep started, with its process, node or sweep gone")
        if orphans:
            log.warning("marked %d run(s) KILLED: their processes are gone (%s)", len(orphans), ", ".join(orphans))
        return orphans

    def _mark_lost(self, run_id: str, why: str) -> None:
        client = self.client()
        client.set_tag(run_id, LOST_TAG, why)
        client.set_terminated(run_id, "KILLED")


class TrackingUnavailable(RuntimeError):
    """The store stopped answering during a run; its results are in the run's record for `ragsweep sync`."""


class RunRecord:
    """What a run logged, kept beside its results (`RECORD_FILE` in the job's output folder), so a run
    the store could not take can be logged later by `ragsweep sync`. Artifacts are kept as paths."""

    def __init__(self, folder: Path | None, uri: str, experiment: str, run_id: str, name: str,
                 tags: dict[str, str], params: dict[str, str]) -> None:
        self.path = Path(folder) / RECORD_FILE if folder is not None else None
        self.uri, self.experiment, self.run_id, self.name = uri, experiment, run_id, name
        self.tags, self.params = tags, params
        self.metrics: dict[str, float] = {}
        self.dataset: dict[str, Any] | None = None
        self.artifacts: list[str] = []
        self.status = "RUNNING"
        self.unsent: list[str] = []
        self._write()

    def add(self, field: str, value: Any) -> None:
        if field == "metrics":
            self.metrics.update(value)
        elif field == "artifacts":
            self.artifacts += [str(Path(path).resolve()) for path in value]
        else:
            setattr(self, field, value)
        self._write()

    def end(self, status: str) -> None:
        self.status = status
        self._write()

    def synced(self, run_id: str) -> None:
        self.run_id, self.unsent = run_id, []
        self._write()

    def advice(self) -> str:
        where = f"{self.path.parent}" if self.path else "(no output folder)"
        return (f"MLflow at {self.uri} did not take this run's {', '.join(dict.fromkeys(self.unsent))}; its results "
                f"are kept in {where}: log them with `ragsweep sync {where}` once the store answers")

    def _write(self) -> None:
        if self.path is None:
            return
        state = {key: value for key, value in vars(self).items() if key != "path"}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps(state, indent=1))
        os.replace(partial, self.path)

    @classmethod
    def read(cls, path: Path) -> RunRecord:
        state = json.loads(Path(path).read_text())
        record = cls.__new__(cls)
        vars(record).update(state)
        record.path = Path(path)
        return record


def _exists(client, run_id: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        client.get_run(run_id)
        return True
    except MlflowException:
        return False


_OPENED_STORES: set[str] = set()  # SQLite stores this process has opened (their tables exist)
_EXPERIMENT_IDS: dict[tuple[str, str], str] = {}  # (uri, name) -> id, for the many runs of one process


def _absolute(uri: str) -> str:
    """A sqlite URI made absolute, so the store does not move with the working directory."""
    if not uri.startswith("sqlite:///"):
        return uri
    return f"sqlite:///{Path(uri.removeprefix('sqlite:///')).resolve()}"


def _process_tags() -> dict[str, str]:
    """Where this run's process lives: host, pid and start time, and its Ray node when a Ray job."""
    process = psutil.Process()
    tags = {"ragsweep.host": socket.gethostname(), "ragsweep.pid": str(process.pid),
            "ragsweep.started": repr(process.create_time())}
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        tags["ragsweep.ray_node"] = ray.get_runtime_context().get_node_id()
        tags["ragsweep.ray_node_ip"] = ray.util.get_node_ip_address()
    if os.environ.get(RERUN_ENV):  # `best --verify` or `gate` rerunning an export: told apart from a user's runs
        tags[RERUN_TAG] = os.environ[RERUN_ENV]
    return tags


def _alive(tags: dict[str, str]) -> bool | None:
    """Whether the process that tagged a run still runs: False when known gone (its Ray node is dead, or
    its pid on this host has exited or been reused), True when known running, None when it cannot be told."""
    node = tags.get("ragsweep.ray_node")
    ray = sys.modules.get("ray")
    if node and ray is not None and ray.is_initialized():
        nodes = {entry["NodeID"]: entry["Alive"] for entry in ray.nodes()}
        if not nodes.get(node, False):
            return False
    pid, started = tags.get("ragsweep.pid"), tags.get("ragsweep.started")
    if not pid or not started or tags.get("ragsweep.host") != socket.gethostname():
        return None  # not ours to judge
    try:
        return repr(psutil.Process(int(pid)).create_time()) == started
    except (psutil.NoSuchProcess, ValueError):
        return False


def _param_value(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 6000 else text[:5997] + "..."  # MLflow's param length limit
