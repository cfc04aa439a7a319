"""Anytime-valid confidence sequences for the mean of bounded values, for stopping a race early.

A confidence interval holds at one sample size fixed in advance; a race looks after every round and stops on
what it sees, so it needs a sequence of intervals that all hold at once: P(the mean is outside C_t for some
t) <= alpha. Such a sequence may be checked as often as one likes, and its running intersection is valid too.

With values x_1..x_n rescaled to [0, 1] by the known bounds, the predictable plug-in empirical-Bernstein
sequence (PrPl-EB: Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting", JRSS-B
2024, Theorem 2) is

    mu_t      = (1/2 + sum_{i<=t} x_i) / (t + 1),     sigma2_t = (1/4 + sum_{i<=t} (x_i - mu_i)^2) / (t + 1)
    lambda_t  = min(sqrt(2 log(2/alpha) / (sigma2_{t-1} t log(1 + t))), 1/2)
    v_t       = 4 (x_t - mu_{t-1})^2,                   psi_E(l) = (-log(1 - l) - l) / 4
    C_t       = sum lambda_i x_i / sum lambda_i  +-  (log(2/alpha) + sum v_i psi_E(lambda_i)) / sum lambda_i

(sums over i <= t, mu_0 = 1/2, sigma2_0 = 1/4). When the values are a draw without replacement from a finite
population of N (a race's seeded order of a fixed question set, the target being the mean over all N), the
without-replacement sequence (Waudby-Smith & Ramdas, "Confidence sequences for sampling without replacement",
NeurIPS 2020, the empirical-Bernstein CS for sampling WoR, as the authors' cswor.predmix_empbern_wor computes
it) adds what the draws so far say about the values not yet drawn:

    centre    = sum lambda_i (x_i + S_{i-1} / (N - i + 1)) / sum lambda_i (1 + (i - 1) / (N - i + 1))
    half      = (log(2/alpha) + sum v_i psi_E(lambda_i)) / sum lambda_i (1 + (i - 1) / (N - i + 1))

with S_{i-1} = x_1 + ... + x_{i-1}, intersected with the bounds the unseen N - t values leave, [S_t / N,
(S_t + N - t) / N] (the same paper's logical CS), so at t = N it is the population mean exactly. Both are
intersected over time, clipped to [0, 1] and mapped back to the original scale.
"""

from __future__ import annotations

import numpy as np

TRUNCATION = 0.5  # c in Theorem 2: the largest bet; 1/2 or 3/4 are the paper's suggestions


def confidence_sequence(values: np.ndarray, alpha: float, bounds: tuple[float, float],
                        population: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds, after each of the n observations, of a (1-alpha) confidence sequence for the
    mean (module doc: PrPl-EB, or WoR-EB when `population` N is given).

    Args:
        values: Shape (..., n), in observation order along the last axis; several sequences at once share
            alpha, bounds and population. Finite and within `bounds`.
        alpha: Miscoverage over all times at once, in (0, 1).
        bounds: (lo, hi), lo < hi: the range every value is known to lie in.
        population: N >= n when the values are drawn without replacement from N; None for draws with
            replacement (or from an unbounded stream).

    Returns:
        (low, high), each of the shape of `values`: the running intersection after 1..n observations; it is
        empty (low > high) only where the sequence has already missed the mean, with P <= alpha.

    Raises:
        ValueError: alpha outside (0, 1), lo >= hi, values outside the bounds or not finite, n > population.
    """
    lo, hi = float(bounds[0]), float(bounds[1])
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not lo < hi:
        raise ValueError(f"bounds must be (lo, hi) with lo < hi, got {bounds!r}")
    raw = np.asarray(values, dtype=np.float64)
    scale = hi - lo
    if not np.isfinite(raw).all() or (raw < lo - 1e-9 * scale).any() or (raw > hi + 1e-9 * scale).any():
        raise ValueError(f"values must be finite and within bounds {bounds!r}: leave failed questions out")
    n = raw.shape[-1]
    if population is not None and not n <= population:
        raise ValueError(f"{n} values drawn without replacement from a population of {population}")
    x = np.clip((raw - lo) / scale, 0.0, 1.0)
    t = np.arange(1, n + 1, dtype=np.float64)
    sums = np.cumsum(x, axis=-1)
    means = (0.5 + sums) / (t + 1)
    variances = (0.25 + np.cumsum((x - means) ** 2, axis=-1)) / (t + 1)
    log_term = np.log(2 / alpha)
    lambdas = np.minimum(np.sqrt(2 * log_term / (_previous(variances, 0.25) * t * np.log1p(t))), TRUNCATION)
    penalty = np.cumsum(4 * (x - _previous(means, 0.5)) ** 2 * (-np.log1p(-lambdas) - lambdas) / 4, axis=-1)
    if population is None:
        weights, weighted = np.cumsum(lambdas, axis=-1), np.cumsum(lambdas * x, axis=-1)
    else:
        remaining = population - t + 1
        weights = np.cumsum(lambdas * (1 + (t - 1) / remaining), axis=-1)
        weighted = np.cumsum(lambdas * (x + (sums - x) / remaining), axis=-1)
    centre, half = weighted / weights, (log_term + penalty) / weights
    low, high = np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
    if population is not None:
        low, high = np.maximum(low, sums / population), np.minimum(high, (sums + population - t) / population)
    low, high = np.maximum.accumulate(low, axis=-1), np.minimum.accumulate(high, axis=-1)
    return lo + scale * low, lo + scale * high


def _previous(series: np.ndarray, start: float) -> np.ndarray:
    """The series shifted one step later along the last axis, `start` first: its value before each step."""
    shifted = np.empty_like(series)
    shifted[..., 0] = start
    shifted[..., 1:] = series[..., :-1]
    return shifted
