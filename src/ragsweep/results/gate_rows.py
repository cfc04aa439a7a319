"""One guarded metric's row of the gate table: the max-drop rule and the test each kind of metric gets
(paired bootstrap, corrected difference, latency percentiles' two-sample bootstrap, Fisher's exact test)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ragsweep.metrics import registry
from ragsweep.numbers import finite_number
from ragsweep.results.best import ResultsError
from ragsweep.results.corrected import CorrectedDifference

_PERCENT = re.compile(r"^\s*([-+]?[\d.]+)\s*%\s*$")


@dataclass(frozen=True)
class MaxDrop:
    """The largest drop of a metric's mean the gate allows: a share of the recorded value, or absolute."""

    value: float
    relative: bool

    def allows(self, recorded: float, current: float, metric: registry.Metric) -> bool:
        """Whether `current` is at most this much worse than `recorded`, in the metric's own direction."""
        limit = self.value * abs(recorded) if self.relative else self.value
        return -metric.improvement(recorded, current) <= limit + 1e-12

    def __str__(self) -> str:
        return f"{self.value * 100:g}%" if self.relative else f"{self.value:g}"


def parse_max_drop(text: str) -> MaxDrop:
    """`5%` (of the recorded value) or `0.02` (absolute, in the metric's units); ResultsError otherwise."""
    percent = _PERCENT.match(text)
    number = finite_number(percent.group(1) if percent else text)
    fix = "give a share of the recorded value like 5% or an absolute drop like 0.02"
    if number is None:
        raise ResultsError(f"--max-drop {text}: not a number; {fix}")
    if number < 0:
        raise ResultsError(f"--max-drop {text}: a drop limit cannot be negative; {fix}")
    if percent and number > 100:
        raise ResultsError(f"--max-drop {text}: a metric cannot drop by more than 100%; {fix}")
    if not percent and number > 1:
        raise ResultsError(f"--max-drop {text}: metrics lie in [0, 1], so this allows any drop; {fix}")
    return MaxDrop(number / 100, True) if percent else MaxDrop(number, False)


def parse_significance(text: str) -> float:
    """The p-value below which a worse paired bootstrap fails the gate; strictly between 0 and 1."""
    number = finite_number(text)
    if number is None or not 0 < number < 1:
        raise ResultsError(f"--significance {text}: give a p-value threshold strictly between 0 and 1, e.g. 0.05")
    return number


def latency_row(metric: str, baseline_ms: np.ndarray, current_ms: np.ndarray, max_drop: MaxDrop,
                significance: float, samples: int = 10_000, seed: int = 0) -> dict:
    """A gate row for a latency percentile (`latency_ms_p95`): each run's percentile of its samples, and the
    share of `samples` bootstrap pairs (each run's samples resampled with replacement on their own) in which
    the current percentile is no worse than the baseline's, as the p-value that it got worse. It fails when
    it rose by more than `max_drop` and that p-value is below `significance`."""
    percentile = float(metric.rsplit("_p", 1)[1])
    if not len(baseline_ms) or not len(current_ms):
        missing = "the baseline" if not len(baseline_ms) else "the current run"
        return {"metric": metric, "recorded": math.nan, "current": math.nan, "change": math.nan, "change %": "",
                "p-value": math.nan, "verdict": f"FAIL: {missing} timed no question for it", "ok": False, "paired": 0}
    rng = np.random.default_rng(seed)
    before, after = float(np.percentile(baseline_ms, percentile)), float(np.percentile(current_ms, percentile))
    resampled = [np.percentile(rng.choice(values, size=(samples, len(values))), percentile, axis=1)
                 for values in (baseline_ms, current_ms)]
    test = {"difference": before - after, "p_value": float(np.mean(resampled[1] <= resampled[0]))}
    failures = failure_reasons(registry.metric(metric), before, after, test, max_drop, significance)
    failures = failures if len(failures) == 2 else []  # timings vary between runs of the same code: both checks
    return gate_row(metric, before, after, test["p_value"], failures, min(len(baseline_ms), len(current_ms)), digits=2)


def rate_row(metric: str, before: tuple[float, int], after: tuple[float, int], max_drop: MaxDrop,
             significance: float) -> dict:
    """A gate row for an error rate given as (rate, questions) per run: fails on a rise beyond `max_drop` or one
    Fisher's exact test (one-sided: the current run fails more often) finds at `significance`."""
    (rate_before, n_before), (rate_after, n_after) = before, after
    p_value = math.nan
    if not math.isnan(rate_after):
        failed = [round(rate * n) for rate, n in (before, after)]
        table = [[failed[1], n_after - failed[1]], [failed[0], n_before - failed[0]]]
        p_value = float(stats.fisher_exact(table, alternative="greater").pvalue)
    test = {"difference": rate_before - rate_after, "p_value": p_value}
    failures = failure_reasons(registry.metric(metric), rate_before, rate_after, test, max_drop, significance)
    return gate_row(metric, rate_before, rate_after, p_value, failures, min(n_before, n_after))


def gate_row(metric: str, before: float, after: float, p_value: float, failures: list[str], paired: int,
         digits: int = 4) -> dict:
    """A gate row: recorded and current value, their change (absolute and relative), the p-value, the verdict."""
    return {"metric": metric, "recorded": round(before, digits), "current": round(after, digits),
            "change": round(after - before, digits), "change %": _percent(before, after),
            "p-value": round(p_value, 4), "verdict": f"FAIL: {', '.join(failures)}" if failures else "ok",
            "ok": not failures, "paired": paired}


def corrected_row(found: CorrectedDifference, max_drop: MaxDrop, significance: float) -> dict:
    """A gate row from current − baseline corrected by people's labels: recorded and current are each run's
    corrected estimate, the change is their paired corrected difference, the p-value that of its interval."""
    difference, metric = found.difference, found.metric
    after, before = found.estimates  # current − baseline
    test = {"difference": -difference.value, "p_value": found.p_value}  # baseline − current, as the bootstrap's
    failures = failure_reasons(registry.metric(metric), before, before + difference.value, test, max_drop, significance)
    return {"metric": metric, "recorded": round(before, 4), "current": round(after, 4),
            "change": round(difference.value, 4), "change %": _percent(before, before + difference.value),
            "p-value": round(found.p_value, 4), "verdict": f"FAIL: {', '.join(failures)}" if failures else "ok",
            "ok": not failures, "paired": difference.n, "labels": difference.n_labelled}


def failure_reasons(metric: registry.Metric, before: float, after: float, test: dict[str, float], max_drop: MaxDrop,
              significance: float) -> list[str]:
    """Why a metric fails the gate; empty when it passes."""
    if math.isnan(after):
        return ["the current run has no value"]
    failures = []
    if not max_drop.allows(before, after, metric):
        failures.append(f"{'rose' if metric.direction == 'minimize' else 'dropped'} more than {max_drop}")
    worse = test["difference"] < 0 if metric.direction == "minimize" else test["difference"] > 0  # baseline - current
    if worse and test["p_value"] < significance:
        failures.append(f"worse at p < {significance:g}")
    return failures


def _percent(before: float, after: float) -> str:
    return f"{(after - before) / before * 100:+.1f}%" if before else ""
