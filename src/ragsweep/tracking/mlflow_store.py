"""The MLflow tracker's side of `RunStore`: its experiment's runs as a table, a run read back or annotated, a
sweep's parent run opened and closed, and what MLflow's UI shows first."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsweep.tracking.base import TrackedRun
from ragsweep.tracking.store import open_client, sqlite_database, sqlite_store_problem
from ragsweep.tracking.tags import RERUN_TAG, ROLE_TAG, run_tags

if TYPE_CHECKING:
    from ragsweep.judging.calibration.draw import Draw
    from ragsweep.tracking.judged_runs import JudgedRun
    from ragsweep.tracking.label_draws import PlacedDraw

RUN_NAME_TAG = "mlflow.runName"  # MLflow's tags of a run's name and of its parent run (a sweep's)
PARENT_TAG = "mlflow.parentRunId"
VIEW_KEY = "ragsweep"  # MLflow's UI opens a view saved as the experiment tag mlflow.sharedViewState.<key>
# with `#/experiments/<id>/runs?viewStateShareKey=<key>`: its search, sort, columns and expanded runs
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
HIDE_RERUNS = f"tags.`{RERUN_TAG}` IS NULL"  # best --verify, gate and exports run again by hand
DESCRIPTION_TAG = "mlflow.note.content"  # an experiment's description at the top of its page in MLflow's UI
MOST_RUNS = 100_000  # mlflow.search_runs' own limit


def ui_experiments(uri: str, most: int = 5) -> list[tuple[str, str, bool]]:
    """The store's experiments but MLflow's empty Default, most recently changed first: (name, id, whether a
    sweep saved its view of the runs), for `ragsweep ui`'s links."""
    found = open_client(uri).search_experiments(order_by=["last_update_time DESC"], max_results=most + 1)
    return [(e.name, e.experiment_id, VIEW_TAG in e.tags) for e in found if e.name != "Default"][:most]


def tracked(run) -> TrackedRun:
    """An MLflow run as ragsweep reads it: its name and parent from MLflow's own tags."""
    tags = dict(run.data.tags)
    return TrackedRun(run.info.run_id, run.info.status, dict(run.data.metrics), tags, dict(run.data.params),
                      name=tags.get(RUN_NAME_TAG) or run.info.run_name or "", parent=tags.get(PARENT_TAG),
                      start_time=run.info.start_time or 0, experiment_id=run.info.experiment_id)


def condition(status: str | None = None, tags: Mapping[str, str] | None = None, parent: str | None = None,
              run_ids: Sequence[str] | None = None) -> str:
    """MLflow's filter string for runs of `status`, with every tag of `tags`, children of `parent`, and whose id
    is one of `run_ids` when given."""
    equal = {**({"attributes.status": status} if status is not None else {}),
             **{f"tags.`{key}`": value for key, value in (tags or {}).items()},
             **({f"tags.`{PARENT_TAG}`": parent} if parent is not None else {})}
    terms = []
    for column, value in equal.items():
        if "'" in str(value):
            raise ValueError(f"a run's {column} cannot be searched for a value with a quote: {value!r}")
        terms.append(f"{column} = '{value}'")
    if run_ids is not None:
        terms.append(f"attributes.run_id IN ({', '.join(repr(str(run_id)) for run_id in run_ids)})")
    return " and ".join(terms)


class MlflowRunStore:
    """`MlflowTracker`'s `RunStore` (it provides `uri`, `client()` and `experiment_id()`)."""

    def experiment_names(self) -> list[str]:
        return [experiment.name for experiment in self.client().search_experiments()]

    def runs(self, *, status: str | None = None, tags: Mapping[str, str] | None = None, parent: str | None = None,
             run_ids: Sequence[str] | None = None, most: int | None = None) -> list[TrackedRun]:
        """The experiment's runs of `status`, with `tags`, children of `parent` (and among `run_ids`), newest
        first."""
        import mlflow

        if run_ids is not None and not run_ids:
            return []
        self.client()
        found = mlflow.search_runs([self.experiment_id()], condition(status, tags, parent, run_ids),
                                   order_by=["attributes.start_time DESC"], max_results=most or MOST_RUNS,
                                   output_format="list")
        return [tracked(run) for run in found]

    def run(self, run_id: str) -> TrackedRun:
        """A run; ValueError when the store has none of that id."""
        from mlflow.exceptions import MlflowException

        try:
            return tracked(self.client().get_run(run_id))
        except MlflowException:
            raise ValueError(f"no run {run_id!r} in {self.uri}") from None

    def set_tags(self, run_id: str, tags: Mapping[str, str]) -> None:
        """All tags in one batch."""
        from mlflow.entities import RunTag

        self.client().log_batch(run_id, tags=[RunTag(key, str(value)) for key, value in tags.items()])

    def log_run_metrics(self, run_id: str, metrics: Mapping[str, float]) -> None:
        """Metrics of a run other than the one being recorded (a race's on its parent)."""
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        self.client().log_batch(run_id, metrics=[Metric(key, float(value), stamp, 0) for key, value in metrics.items()])

    def attach(self, run_id: str, *paths: Path) -> None:
        """Log files to a run, finished or not (a sweep's summary, a report, a race's record)."""
        client = self.client()
        for path in paths:
            client.log_artifact(run_id, str(path))

    def download(self, run_id: str, name: str, folder: str) -> Path:
        """One artifact of a run, copied under `folder`; ValueError when the run or the artifact is missing."""
        from mlflow.exceptions import MlflowException

        try:
            return Path(self.client().download_artifacts(run_id, name, folder))
        except (MlflowException, OSError):
            raise ValueError(f"run {run_id} has no artifact {name} in {self.uri}") from None

    def start_parent(self, name: str, tags: Mapping[str, str]) -> str:
        """A RUNNING parent run for a sweep; its jobs attach to it as children."""
        run = self.client().create_run(self.experiment_id(), run_name=name,
                                       tags={**tags, **run_tags(), ROLE_TAG: "parent"})
        return run.info.run_id

    def finish(self, run_id: str, status: str) -> None:
        self.client().set_terminated(run_id, status)

    def describe_experiment(self, text: str) -> None:
        """Markdown shown as the experiment's description at the top of its page in MLflow's UI."""
        self.client().set_experiment_tag(self.experiment_id(), DESCRIPTION_TAG, text)

    def share_view(self, metric: str, metrics: Sequence[str], parent_run_id: str) -> None:
        """The runs table MLflow's UI opens with `viewStateShareKey=VIEW_KEY` (`ragsweep ui` links it): `metrics`
        as its columns, best first by `metric` in its registry direction, `parent_run_id` opened on its jobs,
        reruns of exports filtered out (MLflow's default view shows Source, Models and Dataset, newest first)."""
        from ragsweep.metrics import registry

        columns = [f"metrics.`{name}`" for name in metrics]
        view = {"searchFilter": HIDE_RERUNS, "orderByKey": f"metrics.`{metric}`",
                "orderByAsc": registry.metric(metric).direction == "minimize", "selectedColumns": columns,
                "columnOrder": columns, "runsExpanded": {parent_run_id: True}}
        self.client().set_experiment_tag(self.experiment_id(), VIEW_TAG, json.dumps(view))

    def local_database(self) -> Path | None:
        """The SQLite file of the store; None for a tracking server."""
        return sqlite_database(self.uri)

    def missing(self) -> Path | None:
        """The SQLite file the store should be, when there is none (MLflow would make an empty store there)."""
        database = self.local_database()
        return None if database is None or database.is_file() else database

    def problem(self) -> str | None:
        """Why the store's SQLite file cannot be opened (not SQLite, unreadable); None when it can or is remote."""
        database = self.local_database()
        return None if database is None else sqlite_store_problem(database)

    def human_labels(self) -> list[dict[str, Any]]:
        """Every claim a person labelled on the experiment's traces (`tracking.feedback_labels`)."""
        from ragsweep.tracking.feedback_labels import human_labels

        return human_labels(self.uri, self.experiment)

    def place_draw(self, runs: Sequence[JudgedRun], drawn: Draw) -> PlacedDraw:
        """Give every drawn claim a trace with its judge feedback and inclusion probability
        (`tracking.label_draws`)."""
        from ragsweep.tracking.label_draws import place_draw

        return place_draw(self, runs, drawn)
