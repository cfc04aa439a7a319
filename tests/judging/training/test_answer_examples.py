"""Support pairs from a QA dataset's reference answers: the answer against its span's passage is supported;
against a near-miss passage, with its answer changed, or the span's sentence negated, it is not."""

from __future__ import annotations

import re

import pytest

from ragsweep.data.sotu_qa import SotuQADataset
from ragsweep.judging.training.answer_examples import answer_examples
from ragsweep.judging.trained import TrainedJudge
from ragsweep.types import Dataset, Document


@pytest.fixture(scope="module")
def sotu() -> Dataset:
    return SotuQADataset().load()


@pytest.fixture(scope="module")
def examples(sotu):
    return answer_examples(sotu)


def test_examples_come_as_supported_then_unsupported_twins(examples):
    assert len(examples) % 2 == 0 and len(examples) >= 200
    for supported, unsupported in zip(examples[::2], examples[1::2], strict=True):
        assert (supported.label, unsupported.label) == (1, 0)
        assert supported.source == unsupported.source
        assert supported.passage == unsupported.passage or supported.claim == unsupported.claim  # one change
    assert {e.kind for e in examples} == {"qa_answer", "qa_span_sentence", "qa_missed_passage", "qa_edited_answer",
                                          "qa_negated_span"}


def test_a_supported_passage_holds_the_answer_and_a_missed_one_neither_span_nor_answer(sotu, examples):
    by_question = {f"{q.text.strip()} {q.answers[0].strip().rstrip('.')}.": q for q in sotu.queries if q.answers}
    for supported, unsupported in zip(examples[::2], examples[1::2], strict=True):
        if unsupported.kind != "qa_missed_passage":
            continue
        query = by_question[supported.claim]
        reference = sotu.documents[query.references[0].doc_id].text[query.references[0].start:query.references[0].end]
        opening = _words(reference)[:6]
        assert _holds(_words(supported.passage), opening) and not _holds(_words(unsupported.passage), opening)
        assert query.answers[0].lower() not in unsupported.passage.lower()


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _holds(words: list[str], run: list[str]) -> bool:
    return any(words[i:i + len(run)] == run for i in range(len(words)))


def test_an_edited_answer_keeps_the_question_as_asked(sotu, examples):
    questions = [q.text.strip() for q in sotu.queries]
    edited = [(s, u) for s, u in zip(examples[::2], examples[1::2], strict=True) if u.kind == "qa_edited_answer"]
    assert len(edited) >= 50
    for supported, unsupported in edited:
        question = next(q for q in questions if supported.claim.startswith(q))
        assert unsupported.claim.startswith(question) and unsupported.claim != supported.claim


def test_the_same_dataset_and_seed_give_the_same_examples(sotu, examples):
    assert answer_examples(sotu, seed=0) == examples


def test_answers_need_a_dataset_with_reference_answers(tmp_path):
    bare = Dataset("bare", {"d": Document("d", "One sentence here. Another sentence there.")}, [])
    with pytest.raises(ValueError, match=r"judge.answers=true needs a dataset with reference answers"):
        TrainedJudge(dataset=bare, answers=True, cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"judge.answers must be true or false"):
        TrainedJudge(dataset=bare, answers="yes", cache_dir=str(tmp_path))


def test_answers_are_part_of_the_model_key(sotu, tmp_path):
    plain = TrainedJudge(dataset=sotu, cache_dir=str(tmp_path))
    supervised = TrainedJudge(dataset=sotu, answers=True, cache_dir=str(tmp_path))
    assert plain.model_key != supervised.model_key
    assert "answers" not in plain.settings  # models trained before this setting keep their keys
