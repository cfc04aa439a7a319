from __future__ import annotations

import math

import numpy as np
import pytest

from ragsweep.metrics.ppi import judge_mean, ppi_mean

Z95 = 1.959963984540054


def test_hand_worked_estimate_and_interval():
    # judge on N=4 items: 1, 0, 1, 1 -> mean 0.75, s2_f = (3 * 0.25^2 + 0.75^2) / 3 = 0.25
    # labelled n=3: judge 1, 1, 0; people 1, 0, 0 -> rectifier y - f = 0, -1, 0, mean -1/3,
    #   s2_r = ((1/3)^2 + (2/3)^2 + (1/3)^2) / 2 = 1/3
    # estimate 0.75 - 1/3 = 5/12; se = sqrt(0.25 / 4 + (1/3) / 3) = sqrt(0.1736...) = 0.41667
    estimate = ppi_mean([1, 0, 1, 1], [1, 1, 0], [1, 0, 0])
    se = math.sqrt(0.25 / 4 + (1 / 3) / 3)
    assert estimate.mean == pytest.approx(5 / 12)
    assert estimate.ci_low == pytest.approx(5 / 12 - Z95 * se)
    assert estimate.ci_high == pytest.approx(5 / 12 + Z95 * se)
    assert (estimate.n_judged, estimate.n_labelled) == (4, 3)
    raw = judge_mean([1, 0, 1, 1])  # 0.75 +- z * sqrt(0.25 / 4)
    assert (raw.mean, raw.ci_high) == (0.75, pytest.approx(0.75 + Z95 * 0.25))
    assert raw.n_labelled == 0


def test_a_judge_that_agrees_with_people_is_not_corrected():
    estimate = ppi_mean([0.2, 0.9, 0.4], [1, 0, 1], [1, 0, 1])
    assert estimate.mean == pytest.approx(0.5)  # rectifier all zero: no shift, no variance from it
    assert estimate.ci_high - estimate.mean == pytest.approx(judge_mean([0.2, 0.9, 0.4]).ci_high - 0.5)


def test_wider_at_lower_confidence_is_narrower():
    wide, narrow = ppi_mean([1, 0, 1, 1], [1, 1, 0], [1, 0, 0]), ppi_mean([1, 0, 1, 1], [1, 1, 0], [1, 0, 0], 0.5)
    assert narrow.ci_high - narrow.ci_low < wide.ci_high - wide.ci_low


def test_coverage_of_a_biased_noisy_judge():
    """Known truth p = 0.7; the judge says 'supported' for 90% of supported and 40% of unsupported claims,
    so it reports 0.75 (bias +0.05). 2000 draws of N = 2000 judged and n = 200 labelled claims."""
    rng = np.random.default_rng(13)
    p, draws, big, small = 0.7, 2000, 2000, 200
    covered_ppi = covered_raw = 0
    for _ in range(draws):
        truth = rng.random(big + small) < p
        judged = np.where(truth, rng.random(big + small) < 0.9, rng.random(big + small) < 0.4).astype(float)
        ppi = ppi_mean(judged[:big], judged[big:], truth[big:].astype(float))
        raw = judge_mean(judged[:big])
        covered_ppi += ppi.ci_low <= p <= ppi.ci_high
        covered_raw += raw.ci_low <= p <= raw.ci_high
    # Monte Carlo sd of a 0.95 coverage over 2000 draws: sqrt(0.95 * 0.05 / 2000) = 0.005
    assert 0.93 <= covered_ppi / draws <= 0.97
    assert covered_raw / draws < 0.2  # half-width 1.96 * sqrt(0.1875 / 2000) = 0.019 around 0.75


@pytest.mark.parametrize(("args", "message"), [
    (([1, 0, 1], [1], [1]), "judged_labelled has 1 value"),
    (([1], [1, 0], [1, 0]), "judged has 1 value"),
    (([1, 0, 1], [1, 0, 1], [1, 0]), "judged_labelled has 3 values but labels has 2"),
    (([1, 0, float("nan")], [1, 0], [1, 0]), "judged holds NaN"),
])
def test_bad_inputs_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        ppi_mean(*args)


@pytest.mark.parametrize("confidence", [0, 1, 1.5, True])
def test_bad_confidence_is_refused(confidence):
    with pytest.raises(ValueError, match="confidence must be in"):
        judge_mean([1, 0], confidence)
