"""What the engine asks of a tracker (`conf/tracking/`), so a job runs the same whichever store records it.

`tests/test_contracts.py` checks every `tracking` option against `Tracker`, and that the runner reads nothing
of a tracker the protocol does not name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class TrackedRun:
    """A run the store holds, as the engine reads it back: a FINISHED configuration or a race's earlier rounds."""

    run_id: str
    status: str
    metrics: Mapping[str, float] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)


class TrackingUnavailable(RuntimeError):
    """The store stopped answering during a run; its results are in the run's record for `ragsweep sync`."""


@runtime_checkable
class Tracker(Protocol):
    """Records one job's run and finds earlier runs of a configuration.

    `uri`, `experiment` and `artifacts` say where runs go; `trace_queries` how many questions a run traces;
    `per_query_top` how many of a sweep's runs keep per_query.jsonl (None: all).
    """

    uri: str
    experiment: str
    artifacts: str
    trace_queries: int
    per_query_top: int | None

    def experiment_id(self) -> str: ...

    def start_run(self, name: str, params: dict[str, Any], tags: dict[str, str], parent_run_id: str | None = None,
                  record_dir: Path | None = None, resume: str | None = None,
                  step: int = 0) -> AbstractContextManager[str]: ...

    def log_metrics(self, metrics: dict[str, float]) -> None: ...

    def log_dataset(self, name: str, fingerprint: str, source: str, queries: int) -> None: ...

    def log_query_traces(self, traces: Sequence[dict]) -> int: ...

    def log_artifacts(self, *paths: Path) -> None: ...

    @property
    def last_run_id(self) -> str | None: ...

    def finished_run(self, config_fingerprint: str) -> TrackedRun | None: ...

    def finished_by_other_code(self, unversioned: str, config_fingerprint: str) -> TrackedRun | None: ...

    def race_run(self, config_fingerprint: str, seed: int) -> TrackedRun | None: ...

    def adopt(self, run_id: str, parent_run_id: str | None) -> None: ...

    def note_reused(self, parent_run_id: str, config_fingerprint: str, run_id: str) -> None: ...

    def drop_per_query(self, run_ids: Sequence[str]) -> None: ...

    def sync(self, record_path: Path) -> str: ...


