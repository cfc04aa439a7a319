from __future__ import annotations

import math

import numpy as np
import pytest

from ragsweep.metrics.confidence_sequence import (BET_TRUNCATION, betting_bound, betting_excludes,
                                                   betting_sequence, confidence_sequence)

N = 300
SEQUENCES = 2000


def _reference(x: list[float], alpha: float, population: int | None) -> tuple[list[float], list[float]]:
    """The module doc's formulas one observation at a time, for values already in [0, 1]."""
    log_term = math.log(2 / alpha)
    total = squares = weights = weighted = penalty = 0.0
    mean_before, variance_before, low, high = 0.5, 0.25, 0.0, 1.0
    lows, highs = [], []
    for t, value in enumerate(x, start=1):
        bet = min(math.sqrt(2 * log_term / (variance_before * t * math.log(1 + t))), 0.5)
        if population is None:
            weights, weighted = weights + bet, weighted + bet * value
        else:
            remaining = population - t + 1
            weights += bet * (1 + (t - 1) / remaining)
            weighted += bet * (value + total / remaining)
        penalty += 4 * (value - mean_before) ** 2 * (-math.log(1 - bet) - bet) / 4
        total += value
        mean_before = (0.5 + total) / (t + 1)
        squares += (value - mean_before) ** 2
        variance_before = (0.25 + squares) / (t + 1)
        centre, half = weighted / weights, (log_term + penalty) / weights
        new_low, new_high = max(centre - half, 0.0), min(centre + half, 1.0)
        if population is not None:
            new_low = max(new_low, total / population)
            new_high = min(new_high, (total + population - t) / population)
        low, high = max(low, new_low), min(high, new_high)
        lows.append(low)
        highs.append(high)
    return lows, highs


def _populations(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Finite populations of N values in [0, 1]: 0/1 at several rates, skewed and symmetric continuous."""
    return {"bernoulli_0.1": (rng.random(N) < 0.1) * 1.0, "bernoulli_0.5": (rng.random(N) < 0.5) * 1.0,
            "rare_0.02": (rng.random(N) < 0.02) * 1.0, "beta_0.5_5": rng.beta(0.5, 5, N),
            "beta_2_2": rng.beta(2, 2, N), "uniform": rng.random(N)}


@pytest.mark.parametrize("population", [None, 40, 500])
def test_vectorised_equals_the_loop_reference_on_any_scale(population):
    rng = np.random.default_rng(7)
    x = rng.beta(0.7, 0.7, 40)
    low, high = confidence_sequence(2 * x - 1, 0.1, (-1.0, 1.0), population)  # [-1, 1] maps back to x
    want_low, want_high = _reference(x.tolist(), 0.1, population)
    np.testing.assert_allclose((low + 1) / 2, want_low, atol=1e-12)
    np.testing.assert_allclose((high + 1) / 2, want_high, atol=1e-12)


def test_rows_are_independent_sequences():
    x = np.random.default_rng(3).random((3, 50))
    low, high = confidence_sequence(x, 0.05, (0, 1), 60)
    for row in range(3):
        one_low, one_high = confidence_sequence(x[row], 0.05, (0, 1), 60)
        np.testing.assert_array_equal(low[row], one_low)
        np.testing.assert_array_equal(high[row], one_high)


def test_without_replacement_the_unseen_values_bound_the_mean():
    # one value 1 of a population of 2: the mean is (1 + the other, in [0, 1]) / 2, in [0.5, 1]; the
    # empirical-Bernstein part is still [0, 1] after one value (half-width (log 40 + 0.048) / 0.5 > 7)
    low, high = confidence_sequence(np.array([1.0]), 0.05, (0, 1), population=2)
    assert (low[0], high[0]) == (0.5, 1.0)


def _drawn(rng: np.random.Generator, values: np.ndarray, draw: str) -> np.ndarray:
    """SEQUENCES sequences of N values: drawn with replacement, or the population in random orders."""
    if draw == "with replacement":
        return values[rng.integers(0, N, (SEQUENCES, N))]
    return values[np.argsort(rng.random((SEQUENCES, N)), axis=1)]


@pytest.mark.parametrize("alpha", [0.05, 0.2])
@pytest.mark.parametrize("draw", ["with replacement", "random order, no population", "random order, WoR"])
def test_coverage_over_all_times(draw, alpha):
    """2,000 sequences of each population; the share whose sequence ever excludes the population mean must
    be at most alpha + 0.02 (more than 3 standard errors of a share of 2,000 near alpha: 0.015 at 0.05)."""
    rng = np.random.default_rng(2024)
    misses = {}
    for name, values in _populations(rng).items():
        x = _drawn(rng, values, draw)
        low, high = confidence_sequence(x, alpha, (0, 1), N if draw.endswith("WoR") else None)
        mean = values.mean()
        misses[name] = float(((low > mean + 1e-12) | (high < mean - 1e-12)).any(axis=1).mean())
    assert max(misses.values()) <= alpha + 0.02, misses


def test_the_sequence_shrinks_and_without_replacement_reaches_the_mean():
    rng = np.random.default_rng(11)
    for name, values in _populations(rng).items():
        x = values[np.argsort(rng.random((200, N)), axis=1)]
        low, high = confidence_sequence(x, 0.05, (0, 1))
        assert (high[:, -1] - low[:, -1]).max() < 0.25, name  # a 0/1 mean of 0.5 gives about 0.20
        wor_low, wor_high = confidence_sequence(x, 0.05, (0, 1), N)
        assert (wor_high[:, 99] - wor_low[:, 99]).mean() < (high[:, 99] - low[:, 99]).mean(), name
        # at t = N the mean is known; a sequence that missed it earlier (P <= alpha) ends empty instead
        assert (wor_high[:, -1] - wor_low[:, -1] < 1e-9).all(), name
        reached = np.isclose(wor_low[:, -1], values.mean()) & np.isclose(wor_high[:, -1], values.mean())
        assert reached.mean() >= 0.95, name


@pytest.mark.parametrize(("values", "alpha", "bounds", "population"), [
    ([0.5], 0.0, (0, 1), None), ([0.5], 1.0, (0, 1), None), ([0.5], 0.05, (1, 0), None),
    ([1.5], 0.05, (0, 1), None), ([math.nan], 0.05, (0, 1), None), ([0.5, 0.5], 0.05, (0, 1), 1)])
def test_bad_inputs_are_refused_in_one_line(values, alpha, bounds, population):
    with pytest.raises(ValueError) as error:
        confidence_sequence(np.array(values), alpha, bounds, population)
    assert "\n" not in str(error.value)


# ---- the betting sequence -----------------------------------------------------------------------------------

def _betting_reference(x: list[float], m: float, alpha: float, population: int | None, side: str) -> list[bool]:
    """betting_excludes' formulas one observation at a time, for values and a candidate mean already in [0, 1]."""
    level = math.log((2 if side == "both" else 1) / alpha)
    total = squares = 0.0
    up = down = 0.0  # log K+ and log K-
    variance_before, excluded, out = 0.25, False, []
    for t, value in enumerate(x, start=1):
        bet = math.sqrt(2 * level / (variance_before * t * math.log(1 + t)))
        centre = m if population is None else (population * m - total) / (population - t + 1)
        centre = min(max(centre, 1e-12), 1 - 1e-12)
        down += math.log(1 - min(bet, BET_TRUNCATION / (1 - centre)) * (value - centre))
        up += math.log(1 + min(bet, BET_TRUNCATION / centre) * (value - centre))
        total += value
        squares += (value - (0.5 + total) / (t + 1)) ** 2
        variance_before = (0.25 + squares) / (t + 1)
        beyond = population is not None and (
            (side != "lower" and m > (total + population - t) / population + 1e-12)
            or (side != "upper" and m < total / population - 1e-12))  # the bounds the unseen values leave
        excluded |= (side != "lower" and down >= level) or (side != "upper" and up >= level) or beyond
        out.append(excluded)
    return out


@pytest.mark.parametrize("side", ["both", "upper", "lower"])
@pytest.mark.parametrize("population", [None, 40, 500])
def test_betting_excludes_equals_the_loop_reference(population, side):
    rng = np.random.default_rng(5)
    x = rng.beta(0.7, 0.7, 40)
    for m in np.linspace(0.02, 0.98, 25):
        got = betting_excludes(2 * x - 1, 2 * m - 1, 0.1, (-1.0, 1.0), population, side)
        assert got.tolist() == _betting_reference(x.tolist(), float(m), 0.1, population, side), m


@pytest.mark.parametrize("side", ["both", "upper", "lower"])
@pytest.mark.parametrize("population", [None, 300, 1000])
def test_betting_sequence_holds_exactly_the_means_not_excluded(population, side):
    """Grid rounding is outwards: every mean outside [low, high] is excluded, and every mean more than a grid
    step inside is not; betting_bound, on a finer grid, is the last interval to within a step, never wider."""
    x = np.random.default_rng(8).beta(2, 5, 300)
    low, high = betting_sequence(x, 0.05, (0, 1), population, side, points=501)
    for m in np.linspace(0, 1, 81):
        excluded = betting_excludes(x, m, 0.05, (0, 1), population, side)
        assert (excluded[(m < low - 1e-12) | (m > high + 1e-12)]).all(), m
        assert not excluded[(m > low + 2e-3) & (m < high - 2e-3)].any(), m
    end_low, end_high = betting_bound(x, 0.05, (0, 1), population, side)
    assert low[-1] - 1e-12 <= end_low <= low[-1] + 2e-3 and high[-1] - 2e-3 <= end_high <= high[-1] + 1e-12


def test_one_sided_betting_leaves_the_other_side_open_and_is_narrower():
    x = np.random.default_rng(9).beta(2, 2, 200)
    low, high = betting_sequence(x, 0.05, (0, 1), side="upper")
    both_low, both_high = betting_sequence(x, 0.05, (0, 1))
    assert (low == 0).all() and (high <= both_high + 1e-12).all() and high[-1] < both_high[-1]


def test_betting_rows_are_independent_sequences():
    x = np.random.default_rng(3).random((3, 50))
    low, high = betting_bound(x, 0.05, (0, 1), 60)
    excluded = betting_excludes(x, np.array([0.1, 0.5, 0.9]), 0.05, (0, 1), 60)
    for row in range(3):
        assert (low[row], high[row]) == betting_bound(x[row], 0.05, (0, 1), 60)
        np.testing.assert_array_equal(excluded[row], betting_excludes(x[row], [0.1, 0.5, 0.9][row], 0.05, (0, 1), 60))


@pytest.mark.parametrize("side", ["both", "upper"])
@pytest.mark.parametrize("alpha", [0.05, 0.2])
@pytest.mark.parametrize("draw", ["with replacement", "random order, no population", "random order, WoR"])
def test_betting_coverage_over_all_times(draw, alpha, side):
    """As test_coverage_over_all_times: of 2,000 sequences per population, the share that ever exclude the
    population mean (from above only, for side="upper") must be at most alpha + 0.02."""
    rng = np.random.default_rng(2025)
    misses = {}
    for name, values in _populations(rng).items():
        x = _drawn(rng, values, draw)
        excluded = betting_excludes(x, values.mean(), alpha, (0, 1), N if draw.endswith("WoR") else None, side)
        misses[name] = float(excluded[:, -1].mean())
    assert max(misses.values()) <= alpha + 0.02, misses


def test_betting_is_narrower_than_empirical_bernstein_at_a_race_alpha():
    """Paired differences of a race (in [-1, 1], sd about 0.2) at alpha = 0.05 / 35: after 50 of 472 questions
    the empirical-Bernstein half-width sits near its floor, log(2/alpha) / (t / 2) ~ 0.29 on [0, 1], i.e. ~ 0.58;
    the betting sequence's is less than two thirds of it."""
    rng = np.random.default_rng(4)
    x = np.clip(rng.normal(-0.05, 0.2, (20, 472)), -1, 1)
    low, high = confidence_sequence(x[:, :50], 0.05 / 35, (-1, 1), 472)
    bet_low, bet_high = betting_bound(x[:, :50], 0.05 / 35, (-1, 1), 472)
    assert (bet_high - bet_low).mean() < 2 / 3 * (high[:, -1] - low[:, -1]).mean()


@pytest.mark.parametrize("function", [betting_excludes, betting_sequence, betting_bound])
@pytest.mark.parametrize(("values", "alpha", "bounds", "population", "side"), [
    ([0.5], 0.0, (0, 1), None, "both"), ([1.5], 0.05, (0, 1), None, "both"), ([0.5, 0.5], 0.05, (0, 1), 1, "both"),
    ([0.5], 0.05, (0, 1), None, "two")])
def test_betting_bad_inputs_are_refused_in_one_line(function, values, alpha, bounds, population, side):
    args = (np.array(values), 0.5) if function is betting_excludes else (np.array(values),)
    with pytest.raises(ValueError) as error:
        function(*args, alpha, bounds, population, side=side)
    assert "\n" not in str(error.value)
