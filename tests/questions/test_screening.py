"""The answerability filter asks the judge about each claim of a draft's answer in each of its excerpts."""

from __future__ import annotations

from ragsweep.judging.base import Pair, Verdict
from ragsweep.judging.lexical import LexicalJudge
from ragsweep.questions.drafts import Draft
from ragsweep.questions.screening import DraftScreen, Screened
from ragsweep.types import Span

TEXT = "The bridge opened in 1932. It carries eight lanes of traffic across the harbour."
LIMITS = {"min_answer_support": 1.0, "unsupported_answer": "drop_question"}


def _screened(answer: str) -> Screened:
    draft = Draft("When did the bridge open?", (TEXT[:26],), answer, "factual", "easy")
    return Screened(attempt=None, draft=draft, spans=[(Span("d", 0, 26), None)])


def test_each_claim_is_judged_against_each_excerpt():
    asked: list[Pair] = []

    def verdicts(pairs: list[Pair]) -> list[Verdict]:
        asked.extend(pairs)
        return [Verdict(1.0, "ok", "") for _ in pairs]

    screen = DraftScreen({}, LIMITS, None, None, [], verdicts, threshold=0.5)
    assert screen._answerability(_screened("The bridge opened in 1932."), TEXT) is None
    assert asked == [Pair("The bridge opened in 1932.", "The bridge opened in 1932.", "support")]


def test_a_real_judge_keeps_a_supported_answer_and_drops_an_unsupported_one():
    judge = LexicalJudge()
    screen = DraftScreen({}, LIMITS, None, None, [], judge.judge, threshold=0.5)
    assert screen._answerability(_screened("The bridge opened in 1932."), TEXT) is None
    dropped = screen._answerability(_screened("Penguins migrate south every winter."), TEXT)
    assert dropped is not None and dropped.reason == "answerability"
