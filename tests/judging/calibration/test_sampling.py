from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragsweep.judging.calibration.feedback import trace_record
from ragsweep.judging.calibration.draw import BINS, Candidate, allocate, candidates, draw, planned_half_widths
from ragsweep.metrics.corrected import error_rates, expected_half_width

UNSUPPORTED, SUPPORTED = BINS


def _population(sizes: dict[tuple[str, str], int]) -> list[Candidate]:
    return [Candidate(run, f"q{i}", 0, f"{verdict} {run} {i}", 1.0 if verdict == SUPPORTED else 0.2,
                      verdict == SUPPORTED)
            for (verdict, run), size in sizes.items() for i in range(size)]


def test_hand_worked_allocation():
    # n = 10 split evenly: 5 per bin. Unsupported: a has 2, b 8 -> quotas 1.0 and 4.0. Supported: a 9, b 3 ->
    # quotas 3.75 and 1.25, floors 3 + 1, the one left goes to the larger remainder (a, 0.75).
    sizes = {(UNSUPPORTED, "a"): 2, (UNSUPPORTED, "b"): 8, (SUPPORTED, "a"): 9, (SUPPORTED, "b"): 3}
    assert allocate(sizes, 10) == {(UNSUPPORTED, "a"): 1, (UNSUPPORTED, "b"): 4, (SUPPORTED, "a"): 4,
                                   (SUPPORTED, "b"): 1}


def test_a_small_bin_gives_all_it_has_and_the_rest_goes_to_the_other():
    # n = 6: 3 per bin, but only 1 unsupported claim -> it is drawn for sure, the supported bin takes 5
    sizes = {(UNSUPPORTED, "a"): 1, (SUPPORTED, "a"): 6, (SUPPORTED, "b"): 4}
    assert allocate(sizes, 6) == {(UNSUPPORTED, "a"): 1, (SUPPORTED, "a"): 3, (SUPPORTED, "b"): 2}
    drawn = draw(_population(sizes), 6)
    assert {c.stratum: p for c, p in drawn.claims if c.stratum[0] == UNSUPPORTED} == {(UNSUPPORTED, "a"): 1.0}
    assert sorted({p for _, p in drawn.claims}) == [0.5, 1.0]  # 3 of 6 and 2 of 4


@given(st.dictionaries(st.tuples(st.sampled_from(BINS), st.sampled_from("abcd")), st.integers(1, 30), min_size=1),
       st.integers(1, 80))
def test_a_draw_takes_min_n_claims_none_twice_at_drawn_over_size(sizes, n):
    population = _population(sizes)
    drawn = draw(population, n, seed=3)
    assert len(drawn.claims) == min(n, len(population))
    assert len({claim for claim, _ in drawn.claims}) == len(drawn.claims)
    counts = Counter(claim.stratum for claim, _ in drawn.claims)
    for claim, inclusion in drawn.claims:
        assert inclusion == counts[claim.stratum] / sizes[claim.stratum]
        assert drawn.strata[claim.stratum] == (sizes[claim.stratum], counts[claim.stratum])
    bins = Counter(claim.stratum[0] for claim, _ in drawn.claims)
    if all(sum(size for key, size in sizes.items() if key[0] == verdict) >= n for verdict in BINS):
        assert abs(bins[UNSUPPORTED] - bins[SUPPORTED]) <= 1  # split evenly when both bins can give their share


def test_the_same_seed_draws_the_same_claims_whatever_the_order():
    population = _population({(UNSUPPORTED, "a"): 7, (SUPPORTED, "a"): 5, (SUPPORTED, "b"): 9})
    first = draw(population, 6, seed=11)
    assert draw(list(reversed(population)), 6, seed=11) == first
    assert draw(population, 6, seed=12).claims != first.claims


def test_every_claim_is_drawn_as_often_as_its_inclusion_probability_says():
    """Over many seeds, each claim's share of draws is its inclusion probability: n = 3 over two bins gives the
    first (unsupported) 2 of its 3 claims and the other 1 of its 5."""
    population = _population({(UNSUPPORTED, "a"): 3, (SUPPORTED, "a"): 5})
    seen = Counter(claim for seed in range(3000) for claim, _ in draw(population, 3, seed).claims)
    expected = {UNSUPPORTED: 2 / 3, SUPPORTED: 1 / 5}
    for claim in population:
        assert seen[claim] / 3000 == pytest.approx(expected[claim.stratum[0]], abs=0.03)


def test_n_must_be_positive():
    with pytest.raises(ValueError, match="--n must be an integer >= 1, got 0"):
        draw(_population({(SUPPORTED, "a"): 2}), 0)


RECORD = {"id": "q1", "question": "When?", "answer": "In 1932. It has eight lanes.",
          "retrieved": [{"doc_id": "d", "start": 0, "end": 20, "score": 0.9},
                        {"doc_id": "d", "start": 20, "end": 40, "score": 0.5}],
          "generation": {"latency_ms": 12.5, "prompt_tokens": 30, "completion_tokens": 8, "error": None},
          "judged": {"claims": [{"text": "In 1932.", "support": [1.0, 0.25]},
                                {"text": "It has eight lanes.", "support": [None, None]},
                                {"text": "It was opened.", "support": [0.5, None]}],
                     "passages": ["It opened in 1932.", "Eight lanes of traffic."]}}


def test_candidates_are_the_scored_claims_numbered_as_their_feedback():
    found = candidates("run", [RECORD], threshold=0.75)
    assert [(c.number, c.score, c.supported, c.feedback) for c in found] == [(0, 1.0, True, "support/0"),
                                                                             (2, 0.5, False, "support/2")]


def test_a_rebuilt_trace_has_the_runners_shape():
    trace = trace_record(RECORD, "LexicalJudge:abc", 0.75)
    assert [span["name"] for span in trace["spans"]] == ["retrieval", "generation"]
    assert [hit["text"] for hit in trace["spans"][0]["outputs"]] == RECORD["judged"]["passages"]
    assert trace["spans"][1]["ms"] == 12.5 and trace["judge"] == "LexicalJudge:abc"
    assert [(f["name"], f["value"], f["rationale"], f["metadata"]["passage_rank"], f["metadata"]["supported"])
            for f in trace["feedback"]] == [("support/0", 1.0, "It opened in 1932.", 1, True),
                                            ("support/2", 0.5, "It opened in 1932.", 1, False)]


def test_planned_widths_use_the_measured_error_and_shrink_with_more_labels():
    # decisions at threshold 0.5: unsupported claims judged 1, 0, 0 (mu0 1/3), supported 1, 1, 0 (mu1 2/3)
    labelled = [(0.9, 0, 1.0), (0.1, 0, 1.0), (0.2, 0, 1.0), (0.8, 1, 1.0), (0.7, 1, 1.0), (0.3, 1, 1.0)]
    questions = [1.0, 0.5, 0.5, 0.0]  # F = 0.5 -> share (0.5 - 1/3) / (1/3) = 0.5
    widths = planned_half_widths(labelled, 0.5, questions, [50, 300])
    rates = error_rates([1, 0, 0, 1, 1, 0], [0, 0, 0, 1, 1, 1])
    assert widths[50] == pytest.approx(expected_half_width(50, rates, 0.5, float(np.var(questions, ddof=1)), 4))
    assert widths[300] < widths[50] and math.isfinite(widths[300])
    with pytest.raises(ValueError, match="at least 2 of each"):
        planned_half_widths(labelled[:4], 0.5, questions, [50])
