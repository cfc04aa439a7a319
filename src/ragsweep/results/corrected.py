"""Paired comparisons of judged metrics corrected by people's labels, as `best`, `report` and `gate` show them.

A run with `judge.labels` records in its metrics.json `<metric>_corrected` with the judge's error rates
(`runner.corrections`). Two runs whose error rates are equal were judged by the same judge against the same
labelled pool, so one correction applies to both and their paired difference is `metrics.corrected`'s
`corrected_difference` over the questions both answered. Runs whose error rates differ (another labels
file, another judge, labels scored from each run's own claims) get no corrected difference, and a note
says why: the paired correction divides both sides by one measured separation mu1 - mu0, and two pools
measure two, so their difference would mix a change of configuration with a change of measurement.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import pandas as pd

from ragsweep.metrics.corrected import Corrected, ErrorRates, corrected_difference
from ragsweep.tracking.table import metric_names

log = logging.getLogger(__name__)

CORRECTABLE = ("faithfulness", "groundedness")  # the judged shares `judge.labels` corrects
CONFIDENCE = 0.95


@dataclass(frozen=True)
class ComparedRun:
    """One side of a comparison: its name, its metrics.json (or just its `_corrected` entries) and its
    per-question metrics (question id -> metrics)."""

    name: str
    summary: Mapping[str, Any]
    per_query: Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class CorrectedDifference:
    """A − B on `metric` corrected by people's labels; `difference` is None and `note` says why when the two
    runs cannot be corrected alike (`note` is empty when neither run carries labels). `estimates`: each run's
    own corrected value, as its metrics.json records it."""

    metric: str
    names: tuple[str, str]
    difference: Corrected | None
    note: str = ""
    estimates: tuple[float, float] | None = None

    @property
    def p_value(self) -> float | None:
        """Two-sided p-value of A − B = 0 from the normal interval: below 1 - CONFIDENCE exactly when the
        interval excludes 0."""
        if self.difference is None:
            return None
        error = self.difference.half_width() / NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
        if error == 0:
            return 1.0 if self.difference.value == 0 else 0.0
        return 2 * (1 - NormalDist().cdf(abs(self.difference.value) / error))


def corrected_entries(summary: Mapping[str, Any]) -> dict[str, dict]:
    """The `<metric>_corrected` entries of a metrics.json, what a comparison needs of it."""
    return {name: dict(value) for name, value in summary.items()
            if name.endswith("_corrected") and isinstance(value, Mapping) and "error_rates" in value}


def paired_corrected(metric: str, a: ComparedRun, b: ComparedRun) -> CorrectedDifference:
    """A − B on `metric` (faithfulness, groundedness) over the questions both runs have it for, corrected by
    the error rates both runs share."""
    names, key = (a.name, b.name), f"{metric}_corrected"
    if metric not in CORRECTABLE:
        return CorrectedDifference(metric, names, None, f"{metric} is not corrected by people's labels")
    found = [run.summary.get(key) for run in (a, b)]
    if not any(found):
        return CorrectedDifference(metric, names, None)
    lacking = [run.name for run, entry in zip((a, b), found, strict=True) if not entry]
    if lacking:
        return CorrectedDifference(metric, names, None, f"{' and '.join(lacking)} has no {key} (run it with "
                                   "judge.labels=FILE): no corrected difference")
    if not _same_rates(found[0]["error_rates"], found[1]["error_rates"]):
        return CorrectedDifference(metric, names, None, f"{key} of {a.name} and {b.name} rest on different error "
                                   "rates (another labels file or judge, or labels scored by each run's own claims): "
                                   "no corrected difference")
    shared = [q for q in a.per_query if metric in a.per_query[q] and metric in b.per_query.get(q, {})]
    try:
        difference = corrected_difference([a.per_query[q][metric] for q in shared],
                                          [b.per_query[q][metric] for q in shared],
                                          ErrorRates(**found[0]["error_rates"]), CONFIDENCE)
    except ValueError as error:
        return CorrectedDifference(metric, names, None, f"no corrected difference on {metric}: {error}")
    return CorrectedDifference(metric, names, difference, estimates=(found[0]["value"], found[1]["value"]))


def difference_line(found: CorrectedDifference) -> str:
    """`A − B on faithfulness = 0.07 ± 0.03 with 120 labels (corrected by people's labels)`, or the note."""
    if found.difference is None:
        return found.note
    value, half = found.difference.value, found.difference.half_width()
    digits = 2 if half >= 0.01 else 4  # a narrow interval would read as 0.00 ± 0.00
    return (f"{found.names[0]} − {found.names[1]} on {found.metric} = {value:.{digits}f} ± {half:.{digits}f} "
            f"with {found.difference.n_labelled} labels (corrected by people's labels)")


def ranking_metric(runs: pd.DataFrame, metric: str) -> str:
    """`<metric>_corrected` when every run that has the judged `metric` also carries its corrected value, so
    configurations rank by what the labels say they are; otherwise `metric`, with a warning when only some
    carry it (a corrected and an uncorrected value are not on one scale)."""
    column = f"{metric}_corrected"
    if metric not in CORRECTABLE or column not in metric_names(runs) or metric not in metric_names(runs):
        return metric
    scored = runs[runs[metric].notna()]
    carried = int(scored[column].notna().sum())
    if carried and carried == len(scored):
        return f"{metric}_corrected"
    if carried:
        log.warning("%d of %d configurations carry %s_corrected: ranked by the judge's %s; rerun the others with "
                    "judge.labels=FILE to rank by the corrected value", carried, len(scored), metric, metric)
    return metric


def _same_rates(first: Mapping[str, float], second: Mapping[str, float]) -> bool:
    """Equal error rates, up to the rounding a JSON round trip may add."""
    return set(first) == set(second) and all(math.isclose(first[k], second[k], rel_tol=1e-9, abs_tol=1e-12)
                                             for k in first)
