from __future__ import annotations

import math

import numpy as np
import pytest

from ragsweep.metrics.corrected import (corrected_difference, corrected_mean, error_check, error_rates,
                                        expected_half_width)

Z95 = 1.959963984540054


def test_hand_worked_rates_and_estimate():
    # unsupported claims: judge 1, 0, 0, 0 -> mu0 0.25, V0 = s2 / n = (0.75 * 0.25 * 4 / 3) / 4 = 0.0625
    # supported claims:   judge 1, 1, 0    -> mu1 2/3,  V1 = (1/3) / 3 = 1/9;  J = 2/3 - 1/4 = 5/12
    rates = error_rates([1, 0, 0, 0, 1, 1, 0], [0, 0, 0, 0, 1, 1, 1])
    assert (rates.mu0, rates.var0, rates.n0) == (0.25, pytest.approx(0.0625), 4)
    assert (rates.mu1, rates.var1, rates.n1) == (pytest.approx(2 / 3), pytest.approx(1 / 9), 3)
    # questions judged 0.5, 0.5, 0.25, 0.75 -> F 0.5, s2_F = 1/24; p = (0.5 - 0.25) / (5/12) = 0.6
    estimate = corrected_mean([0.5, 0.5, 0.25, 0.75], rates)
    variance = (1 / 24 / 4 + 0.4**2 * 0.0625 + 0.6**2 / 9) / (5 / 12) ** 2
    assert estimate.value == pytest.approx(0.6)
    assert estimate.ci_high == pytest.approx(0.6 + Z95 * math.sqrt(variance))
    assert (estimate.n, estimate.n_labelled) == (4, 7)


def test_inclusion_probabilities_undo_a_stratified_draw():
    """Half the labelled unsupported claims were judged 1 but drawn ten times as often as those judged 0:
    weighted, mu0 is the population's 1/11, not the sample's 1/2."""
    rates = error_rates([1, 1, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1], [1.0, 1.0, 0.1, 0.1, 1.0, 1.0])
    assert rates.mu0 == pytest.approx(1 / 11)


def test_a_perfect_judge_is_not_moved():
    rates = error_rates([0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1])
    assert corrected_mean([0.2, 0.8, 0.5], rates).value == pytest.approx(0.5)
    assert corrected_difference([0.8, 0.6], [0.2, 0.4], rates).value == pytest.approx(0.4)


@pytest.mark.parametrize(("judged", "labels", "message"), [
    ([1, 0, 1], [1, 1, 0], "1 labelled claim"),
    ([0, 0, 1, 1], [1, 1, 0, 0], "cannot be corrected"),
    ([1, 0], [1, 0, 1], "give one of each"),
])
def test_what_cannot_be_corrected_says_why(judged, labels, message):
    with pytest.raises(ValueError, match=message):
        error_rates(judged, labels)


def _sweep(rng: np.random.Generator, questions: int, claims: int, labelled: int, continuous: bool):
    """Two configurations on the same questions. Question q's claims are supported with probability a_q under
    A (Beta(6, 2), mean 0.75) and 0.85 a_q under B, so the true A − B is 0.15 * 0.75. The judge is biased and
    noisy alike for both: score 0.35 + 0.3 y + N(0, 0.2), a claim supported when its score reaches 0.5 (false
    positive rate 0.23, true positive rate 0.77). People label `labelled` claims pooled from both, half from
    the claims judged supported and half from the rest, each weighted by its inclusion probability."""
    share_a = rng.beta(6, 2, questions)
    truth = {"a": rng.random((questions, claims)) < share_a[:, None],
             "b": rng.random((questions, claims)) < 0.85 * share_a[:, None]}
    scores = {side: 0.35 + 0.3 * y + rng.normal(0, 0.2, y.shape) for side, y in truth.items()}
    values = {side: s if continuous else (s >= 0.5).astype(float) for side, s in scores.items()}
    pool_y = np.concatenate([truth["a"].ravel(), truth["b"].ravel()]).astype(int)
    pool_f = np.concatenate([values["a"].ravel(), values["b"].ravel()])
    pool_high = np.concatenate([scores["a"].ravel(), scores["b"].ravel()]) >= 0.5
    chosen, inclusion = [], []
    for stratum in (pool_high, ~pool_high):
        members = np.flatnonzero(stratum)
        chosen.append(rng.choice(members, labelled // 2, replace=False))
        inclusion += [labelled // 2 / members.size] * (labelled // 2)
    chosen = np.concatenate(chosen)
    rates = error_rates(pool_f[chosen], pool_y[chosen], inclusion)
    return rates, values["a"].mean(axis=1), values["b"].mean(axis=1)


@pytest.mark.parametrize("continuous", [False, True], ids=["faithfulness", "groundedness"])
def test_paired_interval_covers_the_true_difference(continuous):
    """2000 seeded sweeps of 300 questions, 3 claims each, 200 labels. Monte Carlo sd of a 0.95 coverage over
    2000 runs: 0.005. The judge's own difference (0.55 of the true one, the judge's J) is never covered."""
    rng = np.random.default_rng(29)
    true_a, true_difference = 0.75, 0.15 * 0.75
    runs, covered, covered_a, covered_raw = 2000, 0, 0, 0
    for _ in range(runs):
        rates, a, b = _sweep(rng, 300, 3, 200, continuous)
        difference = corrected_difference(a, b, rates)
        covered += difference.ci_low <= true_difference <= difference.ci_high
        alone = corrected_mean(a, rates)
        covered_a += alone.ci_low <= true_a <= alone.ci_high
        raw = a - b
        half = Z95 * raw.std(ddof=1) / math.sqrt(raw.size)
        covered_raw += abs(raw.mean() - true_difference) <= half
    assert covered / runs >= 0.94
    assert covered_a / runs >= 0.94
    assert covered_raw / runs < 0.5


def test_expected_width_shrinks_as_labels_grow():
    rng = np.random.default_rng(3)
    rates, a, _ = _sweep(rng, 300, 3, 200, False)
    widths = [expected_half_width(n, rates, 0.7, float(a.var(ddof=1)), a.size) for n in (50, 100, 300)]
    assert widths[0] > widths[1] > widths[2]
    measured = corrected_mean(a, rates).half_width()
    assert expected_half_width(200, rates, 0.7, float(a.var(ddof=1)), a.size) == pytest.approx(measured, rel=0.25)


def test_error_check_flags_a_generator_the_judge_reads_differently():
    rng = np.random.default_rng(5)
    y = rng.random(400) < 0.6
    fair = (rng.random(400) < np.where(y, 0.8, 0.2)).astype(float)
    lenient = (rng.random(400) < np.where(y, 0.95, 0.7)).astype(float)  # says yes to most unsupported claims
    ones = np.ones(400)
    report = error_check({"fair": (fair, y.astype(int), ones), "lenient": (lenient, y.astype(int), ones)})
    assert report["lenient"]["p_value"] < 0.001
    same = error_check({"one": (fair[:200], y[:200].astype(int), ones[:200]),
                        "two": (fair[200:], y[200:].astype(int), ones[200:])})
    assert same["one"]["p_value"] > 0.01
