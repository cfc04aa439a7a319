"""A judge's share of supported claims corrected by people's labels pooled across configurations.

The rule. People label claims drawn from every configuration a judge scored. What the labels measure is the
judge's error: its mean value on claims people call unsupported, mu0, and on claims they call supported, mu1
(for a yes/no judge, its false and true positive rates; for a continuous score, its mean score in each class).
The correction assumes those two means do not depend on the configuration (ARES assumes the judge's error
carries across the systems it compares), so one labelled pool corrects every configuration. Then a
configuration whose true share of supported claims is p has judged mean F = mu0 + (mu1 - mu0) p, and

    p_hat   = (F - mu0) / J,                 J = mu1 - mu0                   (Rogan and Gladen, 1978)
    Var     = [s2_F / Q + (1 - p)^2 V0 + p^2 V1] / J^2                       (delta method)
    A - B   = (F_A - F_B) / J,   Var = [s2_D / Q + (A - B)^2 (V0 + V1)] / J^2

F the mean over Q questions of a question's judged value (faithfulness: the share of its claims judged
supported; groundedness: their mean score), s2_F its variance over questions, s2_D that of the paired
per-question differences, and V0, V1 the variances of mu0 and mu1. The difference is paired over the
questions both configurations answered, and the labels' share (V0, V1) enters once, since both sides share J.

A constant shift (PPI's rectifier, Angelopoulos et al., "Prediction-powered inference", Science 2023) pooled
across configurations would cancel from every difference and be biased wherever configurations differ in how
often they are supported; this form corrects differences too, and a judge near chance (J near 0) gets the
wide interval it deserves. Whether the error really is the same everywhere is checked per generator
(`error_check`).

Labels drawn with unequal inclusion probabilities pi_j (`ragsweep labels sample` stratifies by judge score
and configuration) are weighted by w_j = 1/pi_j: mu_k = sum w f / sum w over the claims labelled k, with
the linearised variance of that ratio, V_k = n_k/(n_k - 1) * sum w^2 (f - mu_k)^2 / (sum w)^2 (Hajek; equal
weights give s2/n_k). Intervals are normal and not clipped to [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np


@dataclass(frozen=True)
class ErrorRates:
    """The judge's mean value on claims people call unsupported (mu0) and supported (mu1), and their variances."""

    mu0: float
    var0: float
    n0: int
    mu1: float
    var1: float
    n1: int

    @property
    def separation(self) -> float:
        """J = mu1 - mu0: how far the judge moves between unsupported and supported claims (0 is chance)."""
        return self.mu1 - self.mu0

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass(frozen=True)
class Corrected:
    """An estimate with its interval; `n` questions, `n_labelled` labelled claims it rests on."""

    value: float
    ci_low: float
    ci_high: float
    n: int
    n_labelled: int

    def to_dict(self) -> dict:
        return {"value": self.value, "ci95": [self.ci_low, self.ci_high], "n": self.n, "n_labelled": self.n_labelled}

    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2


def error_rates(judged: Sequence[float], labels: Sequence[int], inclusion: Sequence[float] | None = None
                ) -> ErrorRates:
    """mu0, mu1 and their variances from labelled claims: the judge's value, people's 0/1, each claim's
    inclusion probability (None: all equal).

    Raises:
        ValueError: lengths that differ, fewer than 2 labels of either class, probabilities outside (0, 1],
            or a judge that does not rate supported claims above unsupported ones (J <= 0).
    """
    f = np.asarray(judged, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    pi = np.ones_like(f) if inclusion is None else np.asarray(inclusion, dtype=np.float64)
    if not f.size == y.size == pi.size:
        raise ValueError(f"{f.size} judge values, {y.size} labels and {pi.size} inclusion probabilities: give one "
                         "of each per labelled claim")
    if not np.isfinite(f).all() or not ((pi > 0) & (pi <= 1)).all():
        raise ValueError("judge values must be finite and inclusion probabilities in (0, 1]")
    means = []
    for label in (0, 1):
        chosen = y == label
        count = int(chosen.sum())
        if count < 2:
            raise ValueError(f"{count} labelled claim(s) are {'supported' if label else 'unsupported'}; the "
                             "correction needs at least 2 of each: label more claims (ragsweep labels sample)")
        weights, values = 1 / pi[chosen], f[chosen]
        mean = float(weights @ values / weights.sum())
        variance = float(count / (count - 1) * (weights**2 @ (values - mean) ** 2) / weights.sum() ** 2)
        means.append((mean, variance, count))
    rates = ErrorRates(*means[0], *means[1])
    if rates.separation <= 0:
        raise ValueError(f"the judge rates labelled supported claims no higher than unsupported ones "
                         f"(mu1 {rates.mu1:.3f} <= mu0 {rates.mu0:.3f}): it cannot be corrected, only replaced")
    return rates


def corrected_mean(per_question: Sequence[float], rates: ErrorRates, confidence: float = 0.95) -> Corrected:
    """The share of supported claims from each question's judged value (module doc: p_hat and its Var)."""
    values = _finite_sample(per_question, "per_question")
    judged, separation = float(values.mean()), rates.separation
    share = (judged - rates.mu0) / separation
    variance = (values.var(ddof=1) / values.size + (1 - share) ** 2 * rates.var0 + share**2 * rates.var1) / separation**2
    return _interval(share, variance, confidence, values.size, rates)


def corrected_difference(a: Sequence[float], b: Sequence[float], rates: ErrorRates,
                         confidence: float = 0.95) -> Corrected:
    """A − B from two configurations' judged values on the same questions, in the same order (module doc)."""
    left, right = _finite_sample(a, "a"), _finite_sample(b, "b")
    if left.size != right.size:
        raise ValueError(f"a has {left.size} questions and b {right.size}: pair the questions both answered")
    differences = left - right
    separation = rates.separation
    difference = float(differences.mean()) / separation
    variance = (differences.var(ddof=1) / differences.size
                + difference**2 * (rates.var0 + rates.var1)) / separation**2
    return _interval(difference, variance, confidence, differences.size, rates)


def expected_half_width(n_labels: int, rates: ErrorRates, share: float, spread: float, questions: int,
                        confidence: float = 0.95) -> float:
    """The half-width a configuration's corrected share would have with `n_labels` labels drawn at random,
    the judge erring as `rates` measured: V_k scaled from its measured n_k to n_labels' expected share of
    class k; `spread` is the variance over questions of their judged values."""
    scale0 = rates.n0 / max(n_labels * (1 - share), 1)
    scale1 = rates.n1 / max(n_labels * share, 1)
    variance = (spread / questions + (1 - share) ** 2 * rates.var0 * scale0
                + share**2 * rates.var1 * scale1) / rates.separation**2
    return _z(confidence) * math.sqrt(variance)


def error_check(groups: Mapping[str, tuple[Sequence[float], Sequence[int], Sequence[float]]]) -> dict[str, dict]:
    """Per group (a generator) of labelled claims (judge values, labels, inclusion probabilities): its own mu0
    and mu1, and the p-value of a Wald test that they equal those of the other groups' claims (chi-square
    with 2 degrees of freedom: exp(-x/2)); a side with fewer than 2 labels of a class gets no test."""
    report = {}
    for name, (judged, labels, inclusion) in sorted(groups.items()):
        rest = [group for other, group in groups.items() if other != name]
        try:
            own = error_rates(judged, labels, inclusion)
            others = error_rates(*(np.concatenate([np.asarray(group[part], dtype=np.float64) for group in rest])
                                   for part in range(3))) if rest else None
        except ValueError as error:
            report[name] = {"n": len(labels), "p_value": None, "why": str(error)}
            continue
        report[name] = {"n": len(labels), "mu0": own.mu0, "mu1": own.mu1, "p_value": None}
        if others is not None:
            statistic = ((own.mu0 - others.mu0) ** 2 / max(own.var0 + others.var0, 1e-12)
                         + (own.mu1 - others.mu1) ** 2 / max(own.var1 + others.var1, 1e-12))
            report[name]["p_value"] = math.exp(-statistic / 2)
    return report


def _interval(value: float, variance: float, confidence: float, n: int, rates: ErrorRates) -> Corrected:
    half = _z(confidence) * math.sqrt(variance)
    return Corrected(value, value - half, value + half, n, rates.n0 + rates.n1)


def _finite_sample(values: Sequence[float], name: str) -> np.ndarray:
    """The values as an array; ValueError unless there are 2 or more, all finite (a sample to estimate from)."""
    array = np.asarray(values, dtype=np.float64).ravel()
    if array.size < 2 or not np.isfinite(array).all():
        raise ValueError(f"{name} needs 2 or more finite values, got {array.size}: leave unanswered questions out")
    return array


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), e.g. 0.95; got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)
