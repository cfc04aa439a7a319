"""Runs as a table, for the pandas work of ranking, filtering and grouping them: one row per `TrackedRun`, in
ragsweep's own columns, so what reads runs back never depends on how a store names its fields.

Columns: the record's `run_id`, `status`, `start_time` (a UTC timestamp), `experiment_id`, `name`, `parent` and
`label`; each metric under its own name (`token_iou`, as every summary table shows it), a column of floats, NaN
where a run lacks it; each param as `param(key)` and each tag as `tag(key)` (missing where a run lacks it). A
column a reader adds (`config`, `generator`) is no metric unless it holds floats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ragsweep.tracking.base import TrackedRun

RECORD = ("run_id", "status", "start_time", "experiment_id", "name", "parent", "label")
ADDED = ("reused",)  # what `runs.sweep_jobs` adds: a run a skipped job reused
_PARAM, _TAG = "param:", "tag:"  # a metric's name has neither (the registry's names are identifiers)


def param(key: str) -> str:
    """The column of param `key` (`chunker`, `judge.threshold`)."""
    return _PARAM + key


def tag(key: str) -> str:
    """The column of tag `key` (`ragsweep.config_fingerprint`, `dataset.name`)."""
    return _TAG + key


def runs_table(records: Sequence[TrackedRun]) -> pd.DataFrame:
    """The runs as a table (module doc), in their order; the record's columns even when there is none."""
    metrics = sorted({name for run in records for name in run.metrics})
    params = sorted({key for run in records for key in run.params})
    tags = sorted({key for run in records for key in run.tags})
    data: dict[str, list] = {
        "run_id": [run.run_id for run in records], "status": [run.status for run in records],
        "start_time": list(pd.to_datetime([run.start_time for run in records], unit="ms", utc=True)),
        "experiment_id": [run.experiment_id for run in records], "name": [run.name for run in records],
        "parent": [run.parent for run in records], "label": [run.label for run in records]}
    data.update({name: [float(run.metrics.get(name, math.nan)) for run in records] for name in metrics})
    data.update({param(key): [run.params.get(key) for run in records] for key in params})
    data.update({tag(key): [run.tags.get(key) for run in records] for key in tags})
    return pd.DataFrame(data)


def metric_names(table: pd.DataFrame) -> list[str]:
    """The metrics some run of the table logged."""
    return sorted(column for column in table.columns
                  if _metric_column(column) and pd.api.types.is_float_dtype(table[column]))


def param_keys(table: pd.DataFrame) -> list[str]:
    """The params some run of the table logged, in column order."""
    return [column.removeprefix(_PARAM) for column in table.columns if column.startswith(_PARAM)]


def row_params(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row's params (a table row, `pd.Series`), by key; a param the run did not log is left out."""
    return {column.removeprefix(_PARAM): value for column, value in row.items()
            if column.startswith(_PARAM) and not _missing(value)}


def row_tags(row: Mapping[str, Any]) -> dict[str, str]:
    """A row's tags, by key; a tag the run does not carry is left out."""
    return {column.removeprefix(_TAG): value for column, value in row.items()
            if column.startswith(_TAG) and not _missing(value)}


def row_metrics(row: Mapping[str, Any]) -> dict[str, float]:
    """A row's metrics, by name; a metric the run did not log is left out."""
    return {column: float(value) for column, value in row.items()
            if _metric_column(column) and isinstance(value, float) and not _missing(value)}


def _metric_column(column: object) -> bool:
    return isinstance(column, str) and column not in (*RECORD, *ADDED) and not column.startswith((_PARAM, _TAG))


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
