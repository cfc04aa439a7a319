"""A passage's relevance beside the other passages retrieved with it: the margin rule, worked by hand."""

from __future__ import annotations

import pytest

from ragsweep.judging.in_context import in_context


def test_each_score_moves_by_its_margin_over_the_mean_of_the_others():
    scores = [0.6, 0.4, 0.5]
    # 0.6 + (0.6 - 0.45), 0.4 + (0.4 - 0.55), 0.5 + (0.5 - 0.5)
    assert in_context(scores, 1.0) == pytest.approx([0.75, 0.25, 0.5])
    assert in_context(scores, 0.5) == pytest.approx([0.675, 0.325, 0.5])
    assert sum(in_context(scores, 1.0)) == pytest.approx(sum(scores))  # the question's mean is kept
    assert in_context(scores, 0.0) == scores


def test_failed_calls_stay_failed_and_out_of_the_means_and_a_lone_passage_keeps_its_score():
    assert in_context([0.6, None, 0.4], 1.0) == pytest.approx([0.8, None, 0.2])
    assert in_context([0.7, None], 1.0) == [0.7, None]
    assert in_context([0.7], 2.0) == [0.7]
    assert in_context([], 1.0) == []


def test_scores_are_clipped_to_a_probability():
    assert in_context([0.9, 0.1], 1.0) == [1.0, 0.0]
