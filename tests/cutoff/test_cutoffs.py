"""The cut-offs keep what their rule says, in order, and refuse settings that would mean nothing."""

from __future__ import annotations

import pytest

from ragsweep.cutoff.margin import MarginCutoff
from ragsweep.cutoff.none import NoCutoff
from ragsweep.cutoff.threshold import ThresholdCutoff
from ragsweep.types import Hit

HITS = [[Hit(4, 0.9), Hit(2, 0.55), Hit(7, 0.5), Hit(1, 0.2)], [Hit(3, 0.3), Hit(0, 0.1)], []]


def test_a_threshold_keeps_the_hits_scoring_at_least_it_and_the_first_min_hits():
    assert ThresholdCutoff(0.5).cut(HITS) == [HITS[0][:3], HITS[1][:1], []]
    assert ThresholdCutoff(0.5, min_hits=0).cut(HITS) == [HITS[0][:3], [], []]
    assert ThresholdCutoff(0.95, min_hits=2).cut(HITS) == [HITS[0][:2], HITS[1], []]
    assert ThresholdCutoff(-1.0).cut(HITS) == HITS


def test_a_margin_is_relative_to_each_questions_best():
    # 0.9 - 0.4 * 0.9 = 0.54; 0.3 - 0.4 * 0.3 = 0.18
    assert MarginCutoff(0.4).cut(HITS) == [HITS[0][:2], HITS[1][:1], []]
    assert MarginCutoff(0.0).cut([[Hit(1, 2.0), Hit(2, 2.0), Hit(3, 1.9)]]) == [[Hit(1, 2.0), Hit(2, 2.0)]]
    # negative best (a distance turned score): best - margin * |best| still lies below the best
    assert MarginCutoff(0.5).cut([[Hit(1, -2.0), Hit(2, -2.9), Hit(3, -3.1)]]) == [[Hit(1, -2.0), Hit(2, -2.9)]]


def test_no_cutoff_passes_everything_on():
    assert NoCutoff().cut(HITS) == HITS and NoCutoff.enabled is False


@pytest.mark.parametrize("make, message", [
    (lambda: ThresholdCutoff(float("nan")), "cutoff.min_score must be a finite number"),
    (lambda: ThresholdCutoff("0.5"), "cutoff.min_score must be a finite number"),
    (lambda: ThresholdCutoff(0.5, min_hits=-1), "cutoff.min_hits must be an integer >= 0"),
    (lambda: MarginCutoff(-0.1), "cutoff.margin must be a number >= 0"),
    (lambda: MarginCutoff(True), "cutoff.margin must be a number >= 0"),
])
def test_bad_settings_name_their_key(make, message):
    with pytest.raises(ValueError, match=message):
        make()
