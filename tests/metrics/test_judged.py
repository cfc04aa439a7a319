"""Judged metrics on hand-worked cases: each number below is worked out in the comment beside it."""

from __future__ import annotations

import pytest

from ragsweep.metrics import judged

SUPPORT = [[0.9, 0.2], [0.3, None], [None, None]]  # 3 claims x 2 passages; None = a failed call


def test_claim_support_is_the_best_passage_over_successful_calls():
    assert judged.claim_support(SUPPORT) == [0.9, 0.3, None]


def test_faithfulness_and_groundedness_leave_unscored_claims_out():
    supports = judged.claim_support(SUPPORT)
    assert judged.faithfulness(supports, 0.5) == 0.5  # 0.9 >= 0.5, 0.3 < 0.5; the third claim is unscored
    assert judged.groundedness(supports) == pytest.approx(0.6)  # (0.9 + 0.3) / 2
    assert judged.faithfulness([None], 0.5) is None and judged.groundedness([]) is None


def test_the_threshold_itself_counts_as_supported():
    assert judged.faithfulness([0.5, 0.49], 0.5) == 0.5


def test_citations_count_wrong_when_the_cited_passage_does_not_support_or_was_not_retrieved():
    scores = judged.citation_scores([(1,), (2, 5), ()], SUPPORT, 0.5)
    # (claim 1, [1]) 0.9 -> right; (claim 2, [2]) failed call -> left out; (claim 2, [5]) not retrieved -> wrong
    assert scores == {"citation_coverage": pytest.approx(2 / 3), "citation_accuracy": 0.5}
    assert judged.citation_scores([(), ()], SUPPORT[:2], 0.5) == {"citation_coverage": 0.0}


def test_context_relevance_is_the_mean_over_judged_passages():
    assert judged.context_relevance([1.0, 0.0, None, 0.5]) == 0.5
    assert judged.context_relevance([None]) is None


def test_triad_is_the_weighted_mean_and_bands_follow_the_cut_points():
    assert judged.triad_overall(0.4, 0.6, 0.8) == pytest.approx(0.59)  # 0.35*0.4 + 0.35*0.6 + 0.30*0.8
    assert judged.triad_overall(0.4, None, 0.8) is None
    assert judged.triad_overall(1.0, 0.0, 0.0, weights=(2, 1, 1)) == 0.5  # weights are normalised
    assert [judged.triad_band(x) for x in (0.85, 0.84, 0.70, 0.69, 0.50, 0.49)] == \
        ["excellent", "good", "good", "fair", "fair", "poor"]


def test_wilson_interval_matches_the_worked_formula():
    # 8/10: p=0.8, z^2=3.8415; centre (0.8 + 0.19207)/1.38415 = 0.71673; half 1.96*0.16/1.38415 = 0.22656
    low, high = judged.wilson_interval(8, 10)
    assert (low, high) == (pytest.approx(0.4902, abs=1e-4), pytest.approx(0.9433, abs=1e-4))
    low, high = judged.wilson_interval(0, 10)  # stays inside [0, 1] where the Wald interval collapses to 0
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    with pytest.raises(ValueError):
        judged.wilson_interval(3, 0)


def test_micro_averages_weigh_every_claim_of_the_run_equally():
    summary = judged.micro_summaries([[0.9, 0.1], [0.8], [None]], 0.5)
    assert summary["faithfulness_micro"]["value"] == pytest.approx(2 / 3)  # the macro mean would be (1/2 + 1)/2
    assert summary["faithfulness_micro"]["n"] == 3
    assert summary["groundedness_micro"]["value"] == pytest.approx(0.6)
    assert judged.micro_summaries([[None]], 0.5) == {}


def test_diagnostics_name_the_problem_and_the_remedy():
    found = judged.diagnose(["The bridge opened in 1950.", "It has eight lanes."], [[0.2, 0.4], [0.9, 0.1]],
                            [0.1, 0.3, 0.9], "When did the harbour bridge open and who opened it?",
                            "The bridge opened in 1950. It has eight lanes.", threshold=0.5)
    assert found["unsupported_claims"] == [{"claim": "The bridge opened in 1950.", "best_passage": 2, "score": 0.4}]
    assert found["irrelevant_passages"] == [1, 2]
    assert found["unanswered_terms"] == ["harbour", "opened"] or "harbour" in found["unanswered_terms"]
    assert len(found["hints"]) == 3 and "retrieval" in found["hints"][0]
