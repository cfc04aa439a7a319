"""`best --pareto M1,M2[,M3]`: the configurations worth their cost, each exported as a config that reruns it.

One number cannot say whether 0.02 more answer_f1 is worth 300 ms more p95 latency; the front can: it keeps
every configuration that no other beats on all the metrics at once (`metrics.pareto.non_dominated`, the same
front the report draws and a multi-objective sweep tags), each metric in the direction the registry gives it.
As for `best`, only configurations that ran every question count (a race's stopped ones carry no config
fingerprint, so `finished_jobs` leaves them out), on one dataset, after `--where`. Each point is exported as
`conf/best/<name>_pareto_<i>.yaml` with the manifest and per-question file `best` writes (`best.export`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ragsweep.metrics import registry
from ragsweep.metrics.pareto import non_dominated
from ragsweep.results.best import export, finished_on_dataset, needs
from ragsweep.results.exported import ResultsError
from ragsweep.tracking.base import RunStore
from ragsweep.tracking.runs import datasets
from ragsweep.tracking.table import metric_names

EXAMPLE = ("e.g. --pareto answer_f1,latency_ms_p95,completion_tokens_mean, or token_iou,latency_ms_p95 without "
           "a generator")


@dataclass
class Front:
    table: pd.DataFrame  # the front, best first by the first metric: point, config, each metric, run_id, export
    metrics: tuple[str, ...]
    dataset: str
    datasets: list[str]  # every dataset the experiment has FINISHED runs on
    considered: int  # configurations that have every metric
    exports: list[Path]  # conf/best/<name>_pareto_<i>.yaml, one per point
    left_out: list[str] = field(default_factory=list)  # `<config>: no <metric>` for those that do not
    ties: list[str] = field(default_factory=list)  # configurations equal to an exported point on every metric
    removed: list[Path] = field(default_factory=list)  # exports of points an earlier, longer front had


def pareto_metrics(text: str) -> tuple[str, ...]:
    """The metrics of `--pareto`, checked: two or more, declared, distinct, each with a direction."""
    names = tuple(name.strip() for name in text.split(","))
    if len(names) < 2 or not all(names):
        raise ResultsError(f"--pareto {text}: give two or more comma-separated metrics to trade off, {EXAMPLE}")
    if len(set(names)) < len(names):
        raise ResultsError(f"--pareto {text}: a metric is named twice; name each once")
    for name in names:
        if name not in registry.METRICS:
            directed = ", ".join(n for n, m in registry.METRICS.items() if m.direction != "none")
            raise ResultsError(f"--pareto: unknown metric {name!r}; metrics with a direction: {directed}")
        if registry.metric(name).direction == "none":
            raise ResultsError(f"--pareto: {name} has no direction (neither higher nor lower is better), so no "
                               f"configuration beats another on it; {EXAMPLE}")
    return names


def pareto(tracker: RunStore, text: str, project: Path, name: str | None = None, condition: str | None = None,
           dataset: str | None = None) -> Front:
    """The non-dominated configurations over the metrics of `text` on one dataset (by default the newest run's),
    each exported; a group of configurations equal on every metric is one point, exported once."""
    metrics = pareto_metrics(text)
    every, runs, on = finished_on_dataset(tracker, dataset, condition)
    if runs.empty:
        raise ResultsError(f"no FINISHED run on dataset {on} meets --where {condition!r}")
    columns = list(metrics)
    for metric in metrics:
        if metric not in metric_names(runs) or runs[metric].isna().all():
            raise ResultsError(f"no FINISHED run on dataset {on} has {metric}: {needs(metric)}")
    missing = runs[columns].isna()
    left_out = [f"{row.label}: no {', '.join(m for m, gap in zip(metrics, missing.loc[i]) if gap)}"
                for i, row in runs[missing.any(axis=1)].iterrows()]
    kept = runs[~missing.any(axis=1)]
    if kept.empty:
        raise ResultsError(f"no FINISHED run on dataset {on} has every one of {', '.join(metrics)}: "
                           + "; ".join(left_out[:5]))
    directions = [registry.metric(metric).direction for metric in metrics]
    front = kept[non_dominated(kept[columns].to_numpy(float), directions)]
    front = front.sort_values([*columns, "label"], ascending=[d == "minimize" for d in directions] + [True])
    table, ties, exported = _points(front, metrics)
    name = name or tracker.experiment
    title = (f"Pareto point {{point}} of {len(exported)} of experiment {tracker.experiment!r} on dataset {on} over "
             + ", ".join(f"{m} ({d})" for m, d in zip(metrics, directions)))
    exports = [export(tracker, run, next((m for m in metrics if registry.metric(m).rankable), metrics[0]), project,
               f"{name}_pareto_{point}", title.format(point=point),
               {"pareto": {"metrics": list(metrics), "directions": directions, "point": point,
                           "points": len(exported), "values": {m: float(run[m]) for m in metrics}}}
               ).config for point, run in exported.items()]
    return Front(table, metrics, on, datasets(every), len(kept), exports, left_out, ties,
                 _remove_stale(project / "conf" / "best", name, len(exported)))


def _points(front: pd.DataFrame, metrics: tuple[str, ...]) -> tuple[pd.DataFrame, list[str], dict[int, pd.Series]]:
    """The front's table, numbered by point; the lines naming configurations that tie an earlier one on every
    metric (one configuration stands for each point: the first by name); the run to export for each point."""
    rows, ties, exported = [], [], {}
    seen: dict[tuple[float, ...], int] = {}
    for _, run in front.iterrows():
        values = tuple(float(run[m]) for m in metrics)
        point = seen.setdefault(values, len(seen) + 1)
        if point in exported:
            ties.append(f"{run.label} ties {exported[point].label} on every metric (point {point}): not exported; "
                        "pick it with --where to export it instead")
        else:
            exported[point] = run
        rows.append({"point": point, "config": run.label,
                     **{m: round(v, 4) for m, v in zip(metrics, values)}, "run_id": run.run_id})
    return pd.DataFrame(rows), ties, exported


def _remove_stale(folder: Path, name: str, points: int) -> list[Path]:
    """Remove the exports of points beyond `points` (a longer front exported before under the same name), so
    conf/best/ holds this front only."""
    pattern = re.compile(rf"^{re.escape(name)}_pareto_(\d+)\.(yaml|manifest\.json|per_query\.jsonl)$")
    stale = [path for path in sorted(folder.glob(f"{name}_pareto_*"))
             if (found := pattern.match(path.name)) and int(found.group(1)) > points]
    for path in stale:
        path.unlink()
    return stale
