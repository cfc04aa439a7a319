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

Its half-width never falls below about log(2/alpha) / (TRUNCATION t): with a race's alpha of 0.05/35 that
floor keeps it from separating small gaps early. The betting sequence (`betting_sequence`, what a race uses)
has no such floor; its formulas are in `betting_excludes`.
"""

from __future__ import annotations

import numpy as np

TRUNCATION = 0.5  # c in Theorem 2: the largest bet; 1/2 or 3/4 are the paper's suggestions
BET_TRUNCATION = 0.75  # c of the betting sequence: bets at most c/m or c/(1 - m), so no factor falls below 1 - c
SIDES = ("both", "upper", "lower")


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
    x, lo, scale = _unit(values, alpha, bounds, population)
    n = x.shape[-1]
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


def _unit(values: np.ndarray, alpha: float, bounds: tuple[float, float],
          population: int | None) -> tuple[np.ndarray, float, float]:
    """The values rescaled to [0, 1], with lo and hi - lo to map back, after the checks both sequences share."""
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
    return np.clip((raw - lo) / scale, 0.0, 1.0), lo, scale


def betting_excludes(values: np.ndarray, mean: float | np.ndarray, alpha: float, bounds: tuple[float, float],
                     population: int | None = None, side: str = "both") -> np.ndarray:
    """Whether the betting confidence sequence has excluded `mean` by each of the n observations: a test of
    "the mean is `mean`" that may be looked at after every observation, for the cost of one candidate.

    With the values rescaled to [0, 1] and m the candidate mean, the i-th draw's mean under m is m_i = m with
    replacement and m_i = (N m - S_{i-1}) / (N - i + 1) without (S_{i-1} = x_1 + ... + x_{i-1}). Two capital
    processes bet against m (Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting",
    JRSS-B 2024, Section 4 and Theorem 3, hedged capital process; without replacement as in "Confidence
    sequences for sampling without replacement", NeurIPS 2020, Section 3):

        K+_t(m) = prod_{i<=t} (1 + l+_i (x_i - m_i)),     l+_i = min(l_i, c / m_i)
        K-_t(m) = prod_{i<=t} (1 - l-_i (x_i - m_i)),     l-_i = min(l_i, c / (1 - m_i))
        l_i     = sqrt(2 log(1/a) / (sigma2_{i-1} i log(1 + i)))      (PrPl bet, sigma2 as in the module doc)

    with c = BET_TRUNCATION and a the level of one side. Under m each is a nonnegative martingale from 1, so by
    Ville's inequality P(sup_t K_t(m) >= 1/a) <= a. "upper" excludes m once K- >= 1/alpha (m too large: a
    one-sided upper bound at level alpha), "lower" once K+ >= 1/alpha, "both" once either reaches 2/alpha: the
    max form of the hedged process max(K+, K-)/2 at alpha. The sum form (K+ + K-)/2 excludes a little more, but
    the max form keeps each side monotone in m (every factor of K- rises with m, every factor of K+ falls, the
    caps included), so the means excluded form [0, l_t] and [u_t, 1] and `betting_sequence` is an interval.
    Without replacement, m outside the bounds the unseen values leave, [S_t / N, (S_t + N - t) / N], is
    excluded too (the logical CS of the NeurIPS paper).

    Args:
        values, alpha, bounds, population: As for `confidence_sequence`.
        mean: The candidate mean on the values' scale; a scalar, or one per sequence (the leading shape).
        side: "both", "upper" (exclude only means above) or "lower".

    Returns:
        Bools of the shape of `values`: True from the first observation after which `mean` is excluded.
    """
    x, lo, scale = _unit(values, alpha, bounds, population)
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    m = np.broadcast_to((np.asarray(mean, dtype=np.float64) - lo) / scale, x.shape[:-1])
    level = np.log((2 if side == "both" else 1) / alpha)
    excluded = np.zeros(x.shape, dtype=bool)
    if side != "lower":
        excluded |= _upper_excluded(x, m[..., None], level, population)[..., 0, :]
    if side != "upper":
        excluded |= _upper_excluded(1 - x, 1 - m[..., None], level, population)[..., 0, :]
    return excluded


def betting_sequence(values: np.ndarray, alpha: float, bounds: tuple[float, float], population: int | None = None,
                     side: str = "both", points: int = 1001) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds, after each of the n observations, of the betting (1-alpha) confidence sequence
    (`betting_excludes`), each rounded outwards to a grid of `points` means over the bounds.

    A side not asked for is the bound itself (side="upper": low = lo). Costs points x n per sequence, so for
    plots and checks; `betting_bound` gives the bounds after the last observation alone for 4 x 17 x n.

    Returns:
        (low, high), each of the shape of `values`; every mean outside them is excluded (low > high: all are).
    """
    x, lo, scale = _unit(values, alpha, bounds, population)
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    level = np.log((2 if side == "both" else 1) / alpha)
    grid = np.linspace(0.0, 1.0, points)
    rows = x.reshape(-1, x.shape[-1])
    low, high = np.zeros_like(rows), np.ones_like(rows)
    for row in range(rows.shape[0]):  # one row at a time: a (points, n) array each
        if side != "lower":
            excluded = _upper_excluded(rows[row], grid, level, population)
            high[row] = np.where(excluded, grid[:, None], 1.0).min(axis=0)
        if side != "upper":
            excluded = _upper_excluded(1 - rows[row], grid, level, population)
            low[row] = 1 - np.where(excluded, grid[:, None], 1.0).min(axis=0)
    low, high = _logical(rows, low, high, population, side)
    return lo + scale * low.reshape(x.shape), lo + scale * high.reshape(x.shape)


def betting_bound(values: np.ndarray, alpha: float, bounds: tuple[float, float], population: int | None = None,
                  side: str = "both", points: int = 16, passes: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """`betting_sequence`'s bounds after the last observation only, found by a `points`-ary search (the
    excluded means are [u_n, 1] and [0, l_n]) to within 1 / points**passes of the range, rounded outwards.

    Returns:
        (low, high), each of the leading shape of `values` (a float array of shape () for one sequence).
    """
    x, lo, scale = _unit(values, alpha, bounds, population)
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    level = np.log((2 if side == "both" else 1) / alpha)
    rows = x.reshape(-1, x.shape[-1])
    low, high = np.zeros(rows.shape[0]), np.ones(rows.shape[0])
    if side != "lower":
        high = _upper_bound(rows, level, population, points, passes)
    if side != "upper":
        low = 1 - _upper_bound(1 - rows, level, population, points, passes)
    low, high = _logical(rows, low[:, None], high[:, None], population, side, last=True)
    return lo + scale * low.reshape(x.shape[:-1]), lo + scale * high.reshape(x.shape[:-1])


def _upper_excluded(x: np.ndarray, candidates: np.ndarray, level: float, population: int | None) -> np.ndarray:
    """Whether K-_s(m) >= exp(level) at some s <= t (`betting_excludes`), for x of shape (..., n) in [0, 1] and
    candidates m of shape (..., G): bools of shape (..., G, n). The lower side is this one on 1 - x, 1 - m."""
    n = x.shape[-1]
    t = np.arange(1, n + 1, dtype=np.float64)
    sums = np.cumsum(x, axis=-1)
    means = (0.5 + sums) / (t + 1)
    variances = (0.25 + np.cumsum((x - means) ** 2, axis=-1)) / (t + 1)
    bets = np.sqrt(2 * level / (_previous(variances, 0.25) * t * np.log1p(t)))[..., None, :]
    m = np.asarray(candidates, dtype=np.float64)[..., :, None]
    if population is None:
        centre = np.broadcast_to(m, m.shape[:-1] + (n,))
    else:
        centre = (population * m - (sums - x)[..., None, :]) / (population - t + 1)
    centre = np.clip(centre, 0.0, 1.0 - 1e-12)  # monotone, so the excluded means stay [u_t, 1]
    stakes = np.minimum(bets, BET_TRUNCATION / (1.0 - centre))
    capital = np.cumsum(np.log1p(-stakes * (x[..., None, :] - centre)), axis=-1)
    excluded = np.maximum.accumulate(capital, axis=-1) >= level
    if population is not None:
        excluded |= m > (sums[..., None, :] + population - t) / population + 1e-12
    return excluded


def _upper_bound(rows: np.ndarray, level: float, population: int | None, points: int, passes: int) -> np.ndarray:
    """u_n for each row of `rows` (R, n): the least mean on a `points`-ary grid excluded from above, refined
    `passes` times inside the step where exclusion starts (1.0 when nothing is excluded)."""
    start, width = np.zeros(rows.shape[0]), np.ones(rows.shape[0])
    steps = np.linspace(0.0, 1.0, points + 1)
    end = np.ones(rows.shape[0])
    for _ in range(passes):
        grid = start[:, None] + width[:, None] * steps
        excluded = _upper_excluded(rows, grid, level, population)[..., -1]
        kept = (~excluded).sum(axis=-1)  # the excluded are a suffix of the grid
        chosen = np.arange(rows.shape[0])
        start, end = grid[chosen, np.maximum(kept - 1, 0)], grid[chosen, np.minimum(kept, points)]
        width = end - start
    return end


def _logical(rows: np.ndarray, low: np.ndarray, high: np.ndarray, population: int | None, side: str,
             last: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Bounds narrowed to what the unseen values allow without replacement, [S_t / N, (S_t + N - t) / N]."""
    if population is None:
        return low, high
    n = rows.shape[-1]
    t = np.arange(1, n + 1, dtype=np.float64)
    sums = np.cumsum(rows, axis=-1)
    if last:
        t, sums = t[-1:], sums[:, -1:]
    if side != "lower":
        high = np.minimum(high, (sums + population - t) / population)
    if side != "upper":
        low = np.maximum(low, sums / population)
    return low, high
