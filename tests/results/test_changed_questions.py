"""Runs compared question by question must have answered the same questions: `diff` and `report` name the questions
removed, added or reworded between them and refuse, unless told to compare the ones both have unchanged."""

from __future__ import annotations

import pytest

from ragsweep.results.diff import diff_runs
from ragsweep.results.question_sets import QuestionsChanged, same_questions
from ragsweep.results.report import write_report
from ragsweep.types import Query, Span

TEXTS = ["What is the capital?", "Who wrote it?", "When was it signed?", "Where is it kept?"]
REWORDED = ["What is the capital?", "Who drafted it?", "When was it signed?"]  # q3 removed, q1 reworded


def test_a_questions_hash_changes_with_its_text_references_or_answers_and_not_with_a_parsers_spans():
    asked = Query("q1", "Who wrote it?", (Span("doc", 0, 10),), ("Jefferson",))
    assert asked.sha256() == Query("q1", "Who wrote it?", (Span("doc", 0, 10),), ("Jefferson",), "corpus").sha256()
    for changed in (Query("q1", "Who drafted it?", (Span("doc", 0, 10),), ("Jefferson",)),
                    Query("q1", "Who wrote it?", (Span("doc", 0, 11),), ("Jefferson",)),
                    Query("q1", "Who wrote it?", (Span("doc", 0, 10),), ("Adams",))):
        assert changed.sha256() != asked.sha256()
    quoted = (("doc.pdf", "Jefferson wrote it", 2),)  # dataset=files: each parser finds the quote elsewhere
    assert (Query("q1", "Who wrote it?", (Span("doc.pdf", 5, 23),), quotes=quoted).sha256()
            == Query("q1", "Who wrote it?", (Span("doc.pdf", 9, 27),), (), None, ("x",), quoted).sha256())


def test_same_questions_names_what_changed_and_compares_the_common_ones_only_when_asked():
    before = {"q0": "a", "q1": "b", "q2": "c", "q3": "d"}
    after = {"q0": "a", "q1": "B", "q2": "c", "q9": "e"}
    sides = ("the baseline", "the current run")
    with pytest.raises(QuestionsChanged) as refused:
        same_questions(before, after, "fail", sides, "export a new baseline")
    assert str(refused.value) == (
        "the current run differs from the baseline in its questions: removed 1 (q3), added 1 (q9), changed (text, "
        "references or reference answers) 1 (q1); export a new baseline, or pass "
        "--on-changed-questions=compare-common to compare the 2 questions both have unchanged")
    compared = same_questions(before, after, "compare-common", sides, "export a new baseline")
    assert compared.questions == ("q0", "q2")
    assert compared.lines[-1].endswith("comparing the 2 questions both have unchanged "
                                       "(--on-changed-questions=compare-common)")
    many = {f"q{i}": "x" for i in range(8)}
    with pytest.raises(QuestionsChanged, match=r"removed 7 \(q1, q2, q3, q4, q5, \.\.\. 2 more\)"):
        same_questions(many, {"q0": "x"}, "fail", sides, "fix")
    with pytest.raises(QuestionsChanged, match="no question is in both unchanged, so there is nothing to compare"):
        same_questions({"q0": "a"}, {"q0": "b"}, "compare-common", sides, "fix")


def test_runs_logged_before_questions_were_hashed_are_matched_by_id_and_said_so():
    old = {"q0": None, "q1": None}
    compared = same_questions(old, {"q0": "a", "q1": "b"}, "fail", ("the baseline", "the current run"), "fix")
    assert compared.questions == ("q0", "q1") and not compared.changes.differ
    assert compared.lines == ("the baseline recorded no question hashes (logged before runs recorded them), so "
                              "questions are matched by id only and a reworded one goes unnoticed",)
    assert same_questions({"q0": "a"}, {"q0": "a"}, "fail", ("A", "B"), "fix").lines == ()


def test_diff_refuses_runs_on_changed_questions_unless_told_to_compare_the_common_ones(store):
    before = store.job("chunker=fixed,k=3", [0.1, 0.2, 0.3, 0.4], texts=TEXTS)
    after = store.job("chunker=recursive,k=3", [0.5, 0.6, 0.7], texts=REWORDED)
    with pytest.raises(QuestionsChanged, match=r"removed 1 \(q3\), changed \(text, references or reference "
                                               r"answers\) 1 \(q1\); diff two runs on the same questions"):
        diff_runs(store.tracker, before, after)
    found = diff_runs(store.tracker, before, after, on_changed_questions="compare-common")
    assert sorted(found.table["id"]) == ["q0", "q2"]
    assert found.notes[-1].endswith("comparing the 2 questions both have unchanged "
                                    "(--on-changed-questions=compare-common)")


def test_report_refuses_a_runner_up_on_changed_questions_unless_told_to_compare_the_common_ones(store):
    store.job("chunker=fixed,k=3", [0.1, 0.2, 0.3, 0.4], texts=TEXTS)
    store.job("chunker=recursive,k=3", [0.5, 0.6, 0.7], texts=REWORDED)
    output = store.root / "r.html"
    with pytest.raises(QuestionsChanged, match=r"runner-up chunker=fixed,k=3 differs from the best configuration "
                                               r"\(chunker=recursive,k=3\) in its questions: added 1 \(q3\), "
                                               r"changed \(text, references or reference answers\) 1 \(q1\)"):
        write_report(store.tracker, "token_iou", output, bootstrap_samples=200)
    assert not output.exists()
    page = write_report(store.tracker, "token_iou", output, bootstrap_samples=200,
                        on_changed_questions="compare-common").path.read_text()
    assert "comparing the 2 questions both have unchanged (--on-changed-questions=compare-common)" in page
    assert "<td>chunker=fixed,k=3</td>\n      <td>2</td>" in page  # the runner-up's row: 2 queries paired
