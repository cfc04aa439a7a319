"""The run-level judging summaries: every judge call, whatever its task, is counted and kept when it fails, and
counted in the cost with the judge's lists (claims, questions)."""

from __future__ import annotations

import numpy as np

from ragsweep.judging.base import Listed, Verdict
from ragsweep.judging.claims import split_claims
from ragsweep.runner.judge_stage import (Judgement, _listed, failed_calls, failure_rates, pack_listed,
                                         unpack_listed)

OK, BAD = Verdict(0.9), Verdict(None, "parse_failed", "Sure! Here is")


def test_failed_question_writing_counts_like_any_failed_call():
    claims = split_claims("The bridge opened in 1932. It has eight lanes.")
    asked = Judgement(claims, [[OK, OK], [OK, BAD]], questions=Verdict(None, "parse_failed", "no list"))
    fine = Judgement(claims[:1], [[OK, BAD]], questions=Verdict(0.7, "ok", '["When?"]'))
    rates = failure_rates([asked, fine])
    # calls: support 6 (2 failed), questions 2 (1 failed) -> 3 of 8
    assert rates["judge_failure_rate"] == {"value": 3 / 8, "n": 8}
    assert rates["judge_failure_rate_support"] == {"value": 2 / 6, "n": 6}
    assert rates["judge_failure_rate_questions"] == {"value": 1 / 2, "n": 2}
    failed = failed_calls(["q1", "q2"], [asked, fine])
    assert [(f["id"], f["task"]) for f in failed] == [("q1", "support"), ("q1", "questions"), ("q2", "support")]
    assert failed[0]["raw"] == "Sure! Here is" and failed[1]["raw"] == "no list"


def test_a_judge_that_writes_no_questions_adds_no_questions_rate():
    rates = failure_rates([Judgement(split_claims("One claim."), [[OK]])])
    assert "judge_failure_rate_questions" not in rates and rates["judge_failure_rate"] == {"value": 0.0, "n": 1}


def test_the_judges_decomposition_and_written_questions_count_in_its_cost_not_in_its_failures():
    decomposed = Listed(None, 30, 4, 9.0)  # no usable list: the answer's sentences are its claims, not a failure
    judgement = Judgement(split_claims("One claim."), [[Verdict(1.0, "ok", "", 10, 1, 5.0)]],
                          questions=Verdict(0.5, "ok", "[]", 20, 3, 7.0), decomposed=decomposed)
    assert [(v.prompt_tokens, v.completion_tokens, v.latency_ms) for v in judgement.spent()] == [
        (10, 1, 5.0), (20, 3, 7.0), (30, 4, 9.0)]
    assert failure_rates([judgement])["judge_failure_rate"] == {"value": 0.0, "n": 2}


def test_a_judges_list_keeps_what_it_cost_in_the_stage_cache():
    listed = Listed(["It opened in 1932."], 120, 14, 830.5)
    assert unpack_listed(pack_listed(listed, "statements"), "statements") == listed
    kept_before = {"statements": np.array('["It opened in 1932."]'), "ok": np.array(True)}  # before lists were timed
    assert unpack_listed(kept_before, "statements") == Listed(["It opened in 1932."])
    assert _listed(["a", "b"]) == Listed(["a", "b"]) and _listed(None) == Listed(None)  # a judge of your own's list
