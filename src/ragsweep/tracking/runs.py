"""Reading runs back from MLflow as tables: a sweep's jobs, an experiment's results, ranked.

One row per configuration: when a configuration was run more than once (`force=true`, a verify
rerun), its newest FINISHED run stands for it, so rankings never count a configuration twice.
"""

from __future__ import annotations

import math
import operator
import re

import pandas as pd

from ragsweep.tracking.mlflow_tracker import FINGERPRINT_TAG, ROLE_TAG, MlflowTracker

CONFIG = "tags.mlflow.runName"
FINGERPRINT = f"tags.{FINGERPRINT_TAG}"
DEFAULT_RANKING_METRIC = "token_iou"  # when a sweep sets no optimized_metric, and for `ragsweep best/report`
SUMMARY_METRICS = ("token_recall", "token_precision", "token_iou", "precision_omega", "recall", "mrr", "ndcg")


def sweep_jobs(tracker: MlflowTracker, parent_run_id: str) -> pd.DataFrame:
    """The child runs of a sweep's parent run, plus the finished runs its skipped jobs reused."""
    import mlflow

    tracker.client()
    experiment_id = tracker.experiment_id()
    children = mlflow.search_runs([experiment_id], f"tags.mlflow.parentRunId = '{parent_run_id}'")
    children["reused"] = False
    parent_tags = tracker.client().get_run(parent_run_id).data.tags
    reused_ids = sorted({v for k, v in parent_tags.items() if k.startswith("ragsweep.reused.")})
    if reused_ids:
        ids = ", ".join(f"'{run_id}'" for run_id in reused_ids)
        reused = mlflow.search_runs([experiment_id], f"attributes.run_id IN ({ids})")
        reused["reused"] = True
        children = pd.concat([children, reused], ignore_index=True)
    return children


def finished_jobs(tracker: MlflowTracker) -> pd.DataFrame:
    """Every configuration's newest FINISHED job run in the experiment."""
    import mlflow

    tracker.client()
    runs = mlflow.search_runs([tracker.experiment_id()],
                              f"tags.`{ROLE_TAG}` = 'job' and attributes.status = 'FINISHED'",
                              order_by=["attributes.start_time DESC"])
    if runs.empty:
        return runs
    return runs.drop_duplicates(FINGERPRINT, keep="first").reset_index(drop=True)


def ranked(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Runs best first by `metric` (higher is better); runs without it (failed) last."""
    column = f"metrics.{metric}"
    if column not in runs:
        raise ValueError(f"no run has the metric {metric!r}; metrics present: {', '.join(metric_names(runs))}")
    return runs.sort_values([column, CONFIG], ascending=[False, True], na_position="last").reset_index(drop=True)


def metric_names(runs: pd.DataFrame) -> list[str]:
    return sorted(c.removeprefix("metrics.") for c in runs.columns if c.startswith("metrics."))


_COMPARISONS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "=": operator.eq,
                "!=": operator.ne, "<": operator.lt, ">": operator.gt}
_CONDITION = re.compile(r"^\s*([\w.`-]+)\s*(<=|>=|==|!=|=|<|>)\s*(.+?)\s*$")


def where(runs: pd.DataFrame, condition: str | None) -> pd.DataFrame:
    """Rows meeting `condition`, e.g. `params.k <= 10 and params.store._target_ = ...numpy.NumpyStore`.

    Columns are MLflow's (`params.*`, `metrics.*`, `tags.*`); values compare as numbers when both
    sides are numbers (MLflow keeps params as strings, so its own filter compares "10" < "5").
    """
    if not condition:
        return runs
    keep = pd.Series(True, index=runs.index)
    for part in re.split(r"\s+and\s+", condition.strip(), flags=re.IGNORECASE):
        match = _CONDITION.match(part)
        if not match:
            raise ValueError(f"--where: cannot read {part!r}; write e.g. \"params.k <= 10 and metrics.recall > 0.5\"")
        column, op, value = match.group(1).replace("`", ""), _COMPARISONS[match.group(2)], match.group(3).strip("'\"")
        if column not in runs:
            raise ValueError(f"--where: no column {column!r}; columns look like params.k, metrics.recall, tags.ragsweep.sweep")
        keep &= runs[column].map(lambda cell: _compare(cell, op, value))
    return runs[keep]


def _compare(cell, op, value: str) -> bool:
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return False
    try:
        return bool(op(float(cell), float(value)))
    except (TypeError, ValueError):
        return bool(op(str(cell), value))


def summary_table(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The columns a user ranks a sweep by: rank, config, status, the optimized metric first, then the rest."""
    runs = ranked(runs, metric)
    metrics = [metric, *[m for m in SUMMARY_METRICS if m != metric and f"metrics.{m}" in runs]]
    table = pd.DataFrame({"rank": range(1, len(runs) + 1), "config": runs[CONFIG], "status": runs["status"]})
    for name in metrics:
        table[name] = runs[f"metrics.{name}"].round(4)
    if "reused" in runs:
        table["reused"] = runs["reused"].map({True: "yes", False: ""})
    table["run_id"] = runs["run_id"]
    return table


def markdown(table: pd.DataFrame) -> str:
    """A GitHub-style markdown table (no extra dependency)."""
    cells = [[str(c) for c in table.columns]] + [["" if pd.isna(v) else str(v) for v in row] for row in table.to_numpy()]
    widths = [max(len(row[i]) for row in cells) for i in range(len(table.columns))]
    lines = ["| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (width + 2) for width in widths) + "|")
    return "\n".join(lines) + "\n"
