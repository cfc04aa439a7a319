"""Prediction-powered mean estimation: a judge's estimate corrected by the few items people labelled.

A judge's faithfulness is biased by however often it errs one way; averaging more judged claims
narrows its confidence interval around the wrong value. Prediction-powered inference (PPI;
Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference", Science 382,
2023, and the ARES evaluation of RAG systems, Saad-Falcon et al., NAACL 2024) measures that bias
on the labelled items and removes it:

    theta_PP = mean_{i=1..N} f(x~_i)  +  mean_{j=1..n} (y_j - f(x_j))          (rectified mean)
    CI       = theta_PP +- z_{1-alpha/2} * sqrt(s2_f / N + s2_r / n)            (normal approximation)

where f is the judge's value (a supported/unsupported decision or a probability) on the N judged
items x~ and on the n labelled items x with human labels y, s2_f the sample variance (ddof=1) of f
over the N items, s2_r that of the rectifier y - f over the n items (the paper's Theorem for mean
estimation, with sigma^2_f / N + sigma^2_{f-Y} / n). The guarantee assumes the labelled items are
drawn from the same population as, and independently of, the judged ones; when the labelled
items are also among the N, the overlap is negligible for n much smaller than N.

The raw judge estimate, mean f +- z * sqrt(s2_f / N), is reported beside it: its interval covers
the judge's own mean, not the truth, so its coverage falls as N grows unless the judge is unbiased.
Intervals are not clipped to [0, 1].
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np


@dataclass(frozen=True)
class MeanEstimate:
    """A mean with its confidence interval; `n_judged` and `n_labelled` say what it rests on."""

    mean: float
    ci_low: float
    ci_high: float
    n_judged: int
    n_labelled: int = 0

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


def judge_mean(judged, confidence: float = 0.95) -> MeanEstimate:
    """The judge's own estimate: mean of `judged` +- z * sqrt(s2_f / N), no correction."""
    f = _values(judged, "judged", 2)
    half = _z(confidence) * math.sqrt(f.var(ddof=1) / f.size)
    mean = float(f.mean())
    return MeanEstimate(mean, mean - half, mean + half, int(f.size))


def ppi_mean(judged, judged_labelled, labels, confidence: float = 0.95) -> MeanEstimate:
    """The prediction-powered estimate of the mean of `labels`' population (formula in the module doc).

    Args:
        judged: The judge's values on the N items (N >= 2).
        judged_labelled: The judge's values on the n labelled items (n >= 2), in the order of `labels`.
        labels: Human labels of those n items (e.g. 1 supported, 0 not).
        confidence: Coverage of the interval, in (0, 1).

    Raises:
        ValueError: fewer than 2 judged or labelled items, lengths that differ, non-finite values.
    """
    f = _values(judged, "judged", 2)
    f_labelled = _values(judged_labelled, "judged_labelled", 2)
    y = _values(labels, "labels", 2)
    if f_labelled.size != y.size:
        raise ValueError(f"judged_labelled has {f_labelled.size} values but labels has {y.size}: give the judge's "
                         "value for each labelled item, in the same order")
    rectifier = y - f_labelled
    mean = float(f.mean() + rectifier.mean())
    half = _z(confidence) * math.sqrt(f.var(ddof=1) / f.size + rectifier.var(ddof=1) / rectifier.size)
    return MeanEstimate(mean, mean - half, mean + half, int(f.size), int(y.size))


def _values(values, name: str, minimum: int) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64).ravel()
    if array.size < minimum:
        raise ValueError(f"{name} has {array.size} value(s); a variance needs at least {minimum}: "
                         f"give {minimum} or more")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds NaN or infinite values: leave failed judge calls out before estimating")
    return array


def _z(confidence: float) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), e.g. 0.95; got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)
