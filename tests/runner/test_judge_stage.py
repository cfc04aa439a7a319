"""The run-level judging summaries: every judge call, whatever its task, is counted and kept when it fails."""

from __future__ import annotations

from ragsweep.judging.base import Verdict
from ragsweep.judging.claims import split_claims
from ragsweep.runner.judge_stage import Judgement, failed_calls, failure_rates

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
