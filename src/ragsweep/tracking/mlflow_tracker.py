"""The MLflow tracker (`conf/tracking/mlflow.yaml`): a job's run, and what the engine asks of the store.

SQLite stores race when parallel jobs create experiments or runs they both expect to exist, so a
multirun creates its experiment and parent run once, in the main process (`tracking.sweep`), and hands
the parent's id to the jobs (`parent_run_id`).
"""

from __future__ import annotations

import logging
import os
import sys
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragsweep import per_query
from ragsweep.tracking.base import RunExtension, TrackingUnavailable
from ragsweep.tracking.mlflow_lookups import RunLookups
from ragsweep.tracking.mlflow_store import MlflowRunStore
from ragsweep.tracking.record import RunRecord
from ragsweep.tracking.store import absolute_uri, ensure_experiment, full_store, open_client
from ragsweep.tracking.tags import FINGERPRINT_TAG, PER_QUERY_TAG, ROLE_TAG, run_tags
from ragsweep.tracking.traces import log_claim_feedback, log_dataset, log_traces

log = logging.getLogger(__name__)

class MlflowTracker(RunLookups, MlflowRunStore):
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
        http_retries: A tracking server's retries (None: MLflow's own).
        per_query_top: Keep per_query.jsonl only for a sweep's best N runs by its metric, dropping it from the
            others' artifacts when the sweep ends (None keeps every run's).
    """

    def __init__(self, uri: str, experiment: str, artifacts: str, trace_queries: int = 20,
                 http_retries: int | None = None, per_query_top: int | None = None) -> None:
        if not isinstance(trace_queries, int) or isinstance(trace_queries, bool) or trace_queries < 0:
            raise ValueError(f"tracking.trace_queries must be an integer >= 0, got {trace_queries!r}")
        if per_query_top is not None and (not isinstance(per_query_top, int) or isinstance(per_query_top, bool)
                                          or per_query_top < 1):
            raise ValueError(f"tracking.per_query_top must be an integer >= 1 or null, got {per_query_top!r}")
        self.per_query_top = per_query_top
        self.uri = absolute_uri(uri)
        self.experiment = experiment
        self.artifacts = artifacts
        self.trace_queries = trace_queries
        if http_retries is not None:  # set in the job's own process: the launcher's environment does not reach Ray jobs
            os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = str(int(http_retries))
        self._traces_pending: list[tuple[str, dict]] = []  # (trace id, record) logged, not yet flushed
        self._run = None  # the RunInfo of the run being logged
        self._step = 0  # the step its metrics are logged at (a race's questions so far)
        self._held_open = False  # a race's run left open by its previous round (`RunExtension`)
        self._record: RunRecord | None = None

    def client(self):
        """A client of the store, which also becomes MLflow's tracking URI (see `tracking.store.open_client`)."""
        return open_client(self.uri)

    def experiment_id(self) -> str:
        """The experiment's id, creating it on first use (call once per sweep, before parallel jobs start).

        On a tracking server (http) the server keeps the artifacts (`mlflow server --artifacts-destination`,
        `ragsweep server`); on a local store they go to `artifacts`."""
        return ensure_experiment(self.uri, self.experiment, self.artifacts)

    @contextmanager
    def start_run(self, name: str, params: dict[str, Any], tags: dict[str, str],
                  parent_run_id: str | None = None, record_dir: Path | None = None,
                  extend: RunExtension | None = None) -> Iterator[str]:
        """A job's run: FINISHED when the body returns, FAILED (with `traceback.txt`) when it raises,
        KILLED on Ctrl-C. With `extend` (a race's round), its run is started or extended instead, as
        `RunExtension` says.

        With `record_dir`, everything logged is also kept in `record_dir/RECORD_FILE` (`RunRecord`). When the
        store stops answering mid-run (after MLflow's own retries with backoff), the job goes on, the
        record keeps what was not logged, and the run ends with `TrackingUnavailable` naming the
        `ragsweep sync` command that logs it later.
        """
        extend = extend or RunExtension(None, 0)
        experiment_id = self.experiment_id()
        tags = {**tags, **run_tags(), ROLE_TAG: "job"}
        if parent_run_id:
            tags["mlflow.parentRunId"] = parent_run_id
            if not extend.held_open:
                self._close_lost_attempts(parent_run_id, tags.get(FINGERPRINT_TAG))
        client = self.client()
        changed: dict[str, str] = {}  # tags a held run lacks, set with the `done` tags
        if extend.run_id is None:
            self._run = client.create_run(experiment_id, run_name=name, tags=tags).info
        elif extend.held_open:
            held = client.get_run(extend.run_id)
            self._run = held.info
            changed = {key: str(value) for key, value in tags.items() if held.data.tags.get(key) != str(value)}
        else:
            client.update_run(extend.run_id, status="RUNNING")
            self.set_tags(extend.run_id, tags)
            self._run = client.get_run(extend.run_id).info
        self._step, self._held_open = extend.step, extend.held_open
        self._record = RunRecord(record_dir, self.uri, self.experiment, self._run.run_id, name, tags,
                                 {key: _param_value(value) for key, value in params.items()})
        if not extend.held_open:  # a failed run shows its config
            self._send("params", lambda: self._log_params(self._run.run_id, self._record.params))
        status = "FAILED"
        try:
            try:
                yield self._run.run_id
            finally:
                self._flush_traces()  # before the run closes, even a failed one
            status = "FINISHED"
            last = {**changed, **extend.done}
            if last:
                self._send("tags", lambda: self.set_tags(self._run.run_id, last))
        except KeyboardInterrupt:
            status = "KILLED"  # stopped, not broken: no traceback, and a rerun runs it again
            raise
        except BaseException:
            self._send("traceback", lambda: client.log_text(self._run.run_id, traceback.format_exc(), "traceback.txt"))
            raise
        finally:
            record, self._record = self._record, None
            try:
                if extend.close or status != "FINISHED":
                    self._send_with(record, "status", lambda: client.set_terminated(self._run.run_id, status))
            finally:
                record.end(status)
                if record.unsent and (status != "FINISHED" or sys.exc_info()[0] is not None):  # else raised below
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
        if not self._held_open:  # logged by the round that opened the run
            self._send("dataset", lambda: log_dataset(self._run.run_id, **dataset))

    def log_query_traces(self, traces: Sequence[dict]) -> int:
        """Log the first `trace_queries` questions as MLflow traces of the run; how many were logged.

        Each record is `{"id", "question", "answer", "error", "spans": [{"name", "span_type", "inputs",
        "outputs", "ms"}]}`, with `"feedback"` and `"judge"` when its answer was judged (see
        `ragsweep.tracking.traces`). They are written in the background and flushed, then their claims'
        feedback logged, before the run ends. Not kept for `ragsweep sync`: traces illustrate a run, its
        metrics and per_query.jsonl are its results.
        """
        chosen = list(traces[: self.trace_queries])
        if not chosen or self._record.unsent:
            return 0
        ids = log_traces(chosen, self._run.run_id, self._run.experiment_id)
        self._traces_pending += list(zip(ids, chosen, strict=True))
        return len(ids)

    def _flush_traces(self) -> None:
        if self._traces_pending:
            import mlflow

            pending, self._traces_pending = self._traces_pending, []
            self._send("traces", mlflow.flush_trace_async_logging)
            judged = [(trace_id, record) for trace_id, record in pending if record.get("feedback")]
            if judged:
                self._send("feedback", lambda: [log_claim_feedback(*each) for each in judged])

    def log_artifacts(self, *paths: Path) -> None:
        """Copy files into the run's artifacts through one repository (not one lookup per file)."""
        self._record.add("artifacts", [str(path) for path in paths])
        self._send("artifacts", lambda: self._log_artifacts(self._run.artifact_uri, paths))

    def drop_per_query(self, run_ids: Sequence[str]) -> None:
        """Delete these runs' per_query.jsonl(.gz) from their artifacts and tag each `PER_QUERY_TAG=dropped`, so a
        reader can say why it is missing (see `per_query_top`)."""
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

        client = self.client()
        for run_id in run_ids:
            repository = get_artifact_repository(client.get_run(run_id).info.artifact_uri)
            for name in per_query.NAMES:
                repository.delete_artifacts(name)
            client.set_tag(run_id, PER_QUERY_TAG, "dropped")

    def sync(self, record_path: Path) -> str:
        """Log a job's record (`ragsweep sync`): into its own run when the store has it, else into a new
        run under the same parent when that exists; its run id. A configuration that already has a
        FINISHED run in the experiment is not logged twice."""
        from mlflow.exceptions import MlflowException

        record = RunRecord.read(record_path)
        client = self.client()
        fingerprint = record.tags.get(FINGERPRINT_TAG)
        finished = self.finished_run(fingerprint) if fingerprint else None
        if finished is not None and finished.run_id != record.run_id:
            record.synced(finished.run_id)
            return finished.run_id
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
        (after MLflow's retries) is noted in the record, which `ragsweep sync` replays. A full disk under a SQLite
        store raises, as an OSError naming its file: it takes no next run either, so the job and its sweep end."""
        if record.unsent:
            record.not_taken(what)
            return
        try:
            call()
        except Exception as error:  # noqa: BLE001  (any store error: the results stay in the record)
            log.error("MLflow at %s did not take the run's %s (%s); logging the rest to %s only",
                      self.uri, what, error, record.path or "nowhere (no output folder)")
            record.not_taken(what)
            full = full_store(error, self.uri)
            if full is not None:
                raise full from error

    def _log_params(self, run_id: str, params: dict[str, str]) -> None:
        from mlflow.entities import Param

        self.client().log_batch(run_id, params=[Param(key, value) for key, value in params.items()])

    def _log_metrics(self, run_id: str, metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        self.client().log_batch(run_id, metrics=[Metric(key, value, stamp, self._step)
                                                 for key, value in metrics.items()])

    @property
    def last_run_id(self) -> str | None:
        """The run this tracker logged last (the job's), or None."""
        return self._run.run_id if self._run is not None else None

    def _log_artifacts(self, artifact_uri: str, paths: Sequence[Path]) -> None:
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

        self.client()
        repository = get_artifact_repository(artifact_uri)
        for path in paths:
            repository.log_artifact(str(path))


def _exists(client, run_id: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        client.get_run(run_id)
        return True
    except MlflowException:
        return False


def _param_value(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 6000 else text[:5997] + "..."  # MLflow's param length limit