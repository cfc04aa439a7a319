"""Token-level metrics against hand-computed cases and a brute-force set implementation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsweep.metrics.compat import compat_precision_omega, compat_token_scores, relocate_like_chunking_evaluation
from ragsweep.metrics.intervals import as_intervals, union_length
from ragsweep.metrics.token import precision_omega, token_scores
from ragsweep.metrics.units import UnitLine
from ragsweep.types import Document, Span

intervals = st.lists(st.tuples(st.integers(0, 60), st.integers(1, 20)).map(lambda p: (p[0], p[0] + p[1])), max_size=6)


def _points(pairs) -> set[int]:
    return {point for start, end in pairs for point in range(start, end)}


@given(retrieved=intervals, references=intervals)
@settings(max_examples=300, deadline=None)
def test_standard_scores_equal_set_arithmetic(retrieved, references):
    r, g = _points(retrieved), _points(references)
    scores = token_scores(as_intervals(retrieved), as_intervals(references))
    assert scores["token_recall"] == pytest.approx(len(r & g) / len(g) if g else 0.0)
    assert scores["token_precision"] == pytest.approx(len(r & g) / len(r) if r else 0.0)
    assert scores["token_iou"] == pytest.approx(len(r & g) / len(r | g) if r | g else 0.0)
    assert union_length(as_intervals(retrieved)) == len(r)


def test_hand_computed_standard_scores():
    # retrieved [0,10) and [5,12) cover [0,12): 12 units; reference [8,20): 12 units; shared [8,12): 4
    scores = token_scores(as_intervals([(0, 10), (5, 12)]), as_intervals([(8, 20)]))
    assert scores["token_recall"] == pytest.approx(4 / 12)
    assert scores["token_precision"] == pytest.approx(4 / 12)
    assert scores["token_iou"] == pytest.approx(4 / 20)
    assert scores["token_f1"] == pytest.approx(4 / 12)


def test_empty_sides_score_zero():
    empty = as_intervals([])
    assert set(token_scores(empty, as_intervals([(0, 5)])).values()) == {0.0}
    assert set(token_scores(as_intervals([(0, 5)]), empty).values()) == {0.0}
    assert precision_omega(as_intervals([(0, 5)]), empty) == 0.0


def test_omega_standard_versus_compat_on_touching_chunks():
    chunks = as_intervals([(0, 10), (10, 20), (20, 30)])
    reference = as_intervals([(10, 18)])
    # standard: only [10,20) shares a unit: 8 / 10
    assert precision_omega(chunks, reference) == pytest.approx(0.8)
    # chunking_evaluation: [0,10) touches at 10 and counts: 8 / |[0,20)| = 8 / 20
    assert compat_precision_omega(chunks, reference) == pytest.approx(0.4)


def test_compat_denominators_are_plain_sums():
    # two retrieved chunks overlap on [5,10); reference [5,10)
    scores = compat_token_scores(as_intervals([(0, 10), (5, 15)]), as_intervals([(5, 10)]))
    assert scores["token_precision"] == pytest.approx(5 / 20)  # 10 + 10, not the union's 15
    assert scores["token_recall"] == 1.0
    assert scores["token_iou"] == pytest.approx(5 / 20)  # nothing of the reference left uncovered
    # one chunk [0,10), reference [5,15): shared 5; IoU denominator 10 + 5 uncovered
    partial = compat_token_scores(as_intervals([(0, 10)]), as_intervals([(5, 15)]))
    assert partial["token_iou"] == pytest.approx(5 / 15)


def test_compat_relocation_uses_first_occurrence_without_final_period():
    document = "xx abc yy abc."
    assert relocate_like_chunking_evaluation(document, "abc.") == (3, 6)


def test_token_units_count_every_token_a_span_touches():
    doc = Document("d", "Hello world, this is a test.")  # cl100k: Hello| world|,| this| is| a| test|.
    line = UnitLine({"d": doc}, "tokens")
    assert line.intervals([Span("d", 1, 3)]).tolist() == [[0, 1]]  # "el" lies inside "Hello"
    assert line.intervals([Span("d", 4, 7)]).tolist() == [[0, 2]]  # "o w" touches "Hello" and " world"
    assert line.intervals([Span("d", 0, len(doc.text))]).tolist() == [[0, 8]]


def test_documents_never_touch_on_the_unit_line():
    docs = {"a": Document("a", "abc"), "b": Document("b", "def")}
    line = UnitLine(docs, "chars")
    end_of_a, start_of_b = line.intervals([Span("a", 2, 3), Span("b", 0, 1)])
    assert end_of_a[1] < start_of_b[0]
    assert not np.array_equal(end_of_a, start_of_b)
