"""What the engine and the commands ask of a tracker (`conf/tracking/`), so a job runs, and its runs read back,
the same whichever store records them.

`Tracker` is what a job asks (record its run, find earlier ones); `RunStore` what a sweep's parent run and the
commands that read runs back ask. `tests/test_contracts.py` checks every `tracking` option against both, and that
the code using a tracker reads nothing of it the protocols do not name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ragsweep.tracking.tags import LABEL_TAG

if TYPE_CHECKING:
    from ragsweep.judging.calibration.draw import Draw
    from ragsweep.tracking.judged_runs import JudgedRun
    from ragsweep.tracking.label_draws import PlacedDraw


@dataclass(frozen=True)
class TrackedRun:
    """A run the store holds, as ragsweep reads it back whichever store holds it: what a job looks up (a FINISHED
    configuration, a race's earlier rounds) and every row of the tables the commands rank and compare.

    `name` is the run's name in the store, `parent` its sweep's parent run, `start_time` when it started
    (milliseconds since the epoch) and `experiment_id` the experiment that holds it."""

    run_id: str
    status: str
    metrics: Mapping[str, float] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    name: str = ""
    parent: str | None = None
    start_time: int = 0
    experiment_id: str = ""

    @property
    def label(self) -> str:
        """The configuration's label (`chunker=fixed,k=3`); the run's name for runs logged before labels."""
        return self.tags.get(LABEL_TAG) or self.name


@dataclass(frozen=True)
class RunExtension:
    """How a race's round logs into its configuration's one run, which each round extends.

    The run stays RUNNING between rounds (`close` False until the round of every question), so a round the race
    holds it open for (`held_open`) neither reopens it nor logs its params and dataset again: its metrics at
    `step`, its artifacts, then its `done` tags, last, so a restart trusts a round whose `done` tags it finds."""

    run_id: str | None  # None: the race's first round starts the run
    step: int  # the questions so far, the step its metrics are logged at
    held_open: bool = False
    close: bool = True
    done: Mapping[str, str] = field(default_factory=dict)


class TrackingUnavailable(RuntimeError):
    """The store stopped answering during a run; its results are in the run's record for `ragsweep sync`."""


@runtime_checkable
class Tracker(Protocol):
    """Records one job's run and finds earlier runs of a configuration (`run` and `download` read back a race's
    earlier rounds; `problem` says why the store cannot be opened, before any work; `local_database` is the file on
    this machine the store's URI names, or None for a server, so preflight checks it without reading the URI).

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
                  record_dir: Path | None = None,
                  extend: RunExtension | None = None) -> AbstractContextManager[str]: ...

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

    def run(self, run_id: str) -> TrackedRun: ...

    def download(self, run_id: str, name: str, folder: str) -> Path: ...

    def note_reused(self, parent_run_id: str, config_fingerprint: str, run_id: str) -> None: ...

    def drop_per_query(self, run_ids: Sequence[str]) -> None: ...

    def sync(self, record_path: Path) -> str: ...

    def problem(self) -> str | None: ...

    def local_database(self) -> Path | None: ...


@runtime_checkable
class RunStore(Tracker, Protocol):
    """A tracker's runs read back and annotated: a sweep's parent run, its summary, races, the commands.

    `runs` returns the experiment's runs as `TrackedRun`s, newest first: those of `status`, with every tag of
    `tags`, children of `parent` and among `run_ids` when given, at most `most` (`tracking.table` makes them a
    table). `human_labels` and `place_draw` are the labels people give on traces (`ragsweep labels`): a store
    without traces raises ValueError saying so.
    """

    def experiment_names(self) -> list[str]: ...

    def runs(self, *, status: str | None = None, tags: Mapping[str, str] | None = None, parent: str | None = None,
             run_ids: Sequence[str] | None = None, most: int | None = None) -> list[TrackedRun]: ...

    def set_tags(self, run_id: str, tags: Mapping[str, str]) -> None: ...

    def log_run_metrics(self, run_id: str, metrics: Mapping[str, float]) -> None: ...

    def attach(self, run_id: str, *paths: Path) -> None: ...

    def start_parent(self, name: str, tags: Mapping[str, str]) -> str: ...

    def finish(self, run_id: str, status: str) -> None: ...

    def describe_experiment(self, text: str) -> None: ...

    def share_view(self, metric: str, metrics: Sequence[str], parent_run_id: str) -> None: ...

    def missing(self) -> Path | None: ...

    def kill_orphans(self) -> list[str]: ...

    def kill_running_children(self, parent_run_id: str, wait_s: float = 10.0) -> list[str]: ...

    def human_labels(self) -> list[dict[str, Any]]: ...

    def place_draw(self, runs: Sequence[JudgedRun], drawn: Draw) -> PlacedDraw: ...
