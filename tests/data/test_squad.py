"""The SQuAD loader on small v1.1 and v2.0 files written for each test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsweep.data.base import DatasetError
from ragsweep.data.loading import load_once, warn_if_few_questions
from ragsweep.data.squad import SquadDataset
from ragsweep.types import Span

FOX = "The quick brown fox jumps over the lazy dog."  # "quick brown fox" is [4, 19), "fox" [16, 19)
DOG = "A second paragraph about a dog."  # "a dog" is [25, 30)


def _qa(qid: str, *answers: tuple[str, int], **extra) -> dict:
    return {"id": qid, "question": f"question {qid}?",
            "answers": [{"text": text, "answer_start": start} for text, start in answers], **extra}


def _article(title: str = "Fox", fox_qas: list | None = None, dog_qas: list | None = None) -> dict:
    fox_qas = fox_qas if fox_qas is not None else [
        _qa("q1", ("quick brown fox", 4), ("quick brown fox", 4), ("fox", 16))]
    dog_qas = dog_qas if dog_qas is not None else [_qa("q2", ("a dog", 25))]
    return {"title": title, "paragraphs": [{"context": FOX, "qas": fox_qas}, {"context": DOG, "qas": dog_qas}]}


def _write(tmp_path: Path, *articles: dict, version: str = "1.1") -> Path:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"version": version, "data": list(articles)}))
    return path


def test_v11_paragraphs_are_documents_and_answers_are_references(tmp_path):
    dataset = SquadDataset(str(_write(tmp_path, _article()))).load()
    assert sorted(dataset.documents) == ["Fox#0", "Fox#1"]
    assert dataset.documents["Fox#1"].text == DOG
    q1, q2 = dataset.queries
    # the two identical annotations of "quick brown fox" are one span and one answer
    assert q1.references == (Span("Fox#0", 4, 19), Span("Fox#0", 16, 19))
    assert q1.answers == ("quick brown fox", "fox")
    assert (q1.id, q1.text, q1.corpus) == ("q1", "question q1?", "Fox")
    assert q2.references == (Span("Fox#1", 25, 30),) and q2.answers == ("a dog",)
    assert dataset.loading == {"unanswerable_skipped": 0}
    assert dataset.name == "dev"


def test_v20_unanswerable_questions_are_skipped_and_counted(tmp_path):
    fox_qas = [
        _qa("q1", ("fox", 16), is_impossible=False),
        _qa("impossible", ("dog", 40), is_impossible=True),  # answers given, yet marked unanswerable
        _qa("no-answers"),  # no is_impossible key, empty answers
    ]
    dataset = SquadDataset(str(_write(tmp_path, _article(fox_qas=fox_qas), version="v2.0"))).load()
    assert [q.id for q in dataset.queries] == ["q1", "q2"]
    assert dataset.loading == {"unanswerable_skipped": 2}


def test_join_paragraphs_shifts_offsets_into_the_article(tmp_path):
    second = _article("Cat", fox_qas=[_qa("c1", ("lazy dog", 35))], dog_qas=[_qa("c2", ("second", 2))])
    dataset = SquadDataset(str(_write(tmp_path, _article(), second)), join_paragraphs=True).load()
    assert sorted(dataset.documents) == ["Cat", "Fox"]
    assert dataset.documents["Fox"].text == FOX + "\n\n" + DOG
    for query in dataset.queries:
        for reference, answer in zip(query.references, query.answers, strict=True):
            assert dataset.documents[reference.doc_id].text[reference.start : reference.end] == answer
    by_id = {q.id: q for q in dataset.queries}
    assert by_id["q2"].references == (Span("Fox", 71, 76),)  # 44 (FOX) + 2 ("\n\n") + 25
    assert by_id["c2"].references == (Span("Cat", 48, 54),)  # 44 + 2 + 2


def _shifted(tmp_path: Path) -> Path:
    """q1's first answer and q2's answer start 2 characters late; q1's second answer is right."""
    fox_qas = [_qa("q1", ("quick brown fox", 6), ("fox", 16))]
    return _write(tmp_path, _article(fox_qas=fox_qas, dog_qas=[_qa("q2", ("a dog", 27))]))


def test_mismatched_offsets_fail_naming_file_record_field_and_count(tmp_path):
    path = _shifted(tmp_path)
    with pytest.raises(DatasetError) as error:
        SquadDataset(str(path)).load()
    message = str(error.value)
    assert message.startswith(f"{path} article 'Fox' question 'q1' answers[0]: content 'quick brown fox' differs")
    assert "2 of 2 records affected (2 spans)" in message
    assert "dataset.on_span_mismatch=repair" in message


def test_repair_moves_mismatched_spans_and_counts_them(tmp_path):
    dataset = SquadDataset(str(_shifted(tmp_path)), on_span_mismatch="repair").load()
    q1, q2 = dataset.queries
    assert q1.references == (Span("Fox#0", 4, 19), Span("Fox#0", 16, 19))
    assert q2.references == (Span("Fox#1", 25, 30),)
    assert dataset.loading == {"unanswerable_skipped": 0, "spans_repaired": 2}


def test_repair_fails_beyond_the_window(tmp_path):
    with pytest.raises(DatasetError, match=r"question 'q1' answers\[0\]: .* does not start within 1 characters of 6; "
                                           r"2 of 2 records affected .*raise dataset.repair_window"):
        SquadDataset(str(_shifted(tmp_path)), on_span_mismatch="repair", repair_window=1).load()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"data": [', r"dev.json: invalid JSON"),
        ({"version": "1.1"}, r"dev.json: missing field 'data'"),
        ({"data": [{"title": 7, "paragraphs": []}]}, r"dev.json data\[0\]: field 'title' must be str"),
        ({"data": [{"title": "Fox", "paragraphs": [{"qas": []}]}]}, r"article 'Fox' paragraphs\[0\]: missing field 'context'"),
        ({"data": [_article(fox_qas=[{"id": "q9", "question": "?", "answers": [{"text": "fox"}]}])]},
         r"article 'Fox' question 'q9' answers\[0\]: missing field 'answer_start'"),
        ({"data": [_article(fox_qas=[_qa("q9", ("fox", 16), is_impossible="no")])]},
         r"question 'q9': field 'is_impossible' must be true or false"),
        ({"data": [_article(dog_qas=[_qa("q1", ("a dog", 25))])]}, r"duplicate query id 'q1'"),
    ],
)
def test_bad_files_name_file_record_and_field(tmp_path, data, message):
    path = tmp_path / "dev.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    with pytest.raises(DatasetError, match=message):
        SquadDataset(str(path)).load()


@pytest.mark.parametrize(("ids", "expected"), [(("d1", "d2"), ["d1", "d2"]), (None, ["article-0#0", "article-0#1"])])
def test_articles_without_a_title_are_named_by_document_id_else_by_index(tmp_path, ids, expected):
    article = _article(fox_qas=[_qa("q1", ("fox", 16))])
    del article["title"]
    for paragraph, doc_id in zip(article["paragraphs"], ids or (), strict=False):
        paragraph["document_id"] = doc_id
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"data": [article]}))
    dataset = SquadDataset(str(path)).load()
    assert sorted(dataset.documents) == expected
    assert dataset.queries[0].references[0].doc_id == expected[0]
    joined = SquadDataset(str(path), join_paragraphs=True).load()
    assert list(joined.documents) == [expected[0].split("#")[0]]


def test_path_must_be_a_file(tmp_path):
    with pytest.raises(DatasetError, match=r"dataset.path=.* is a folder; point dataset.path at the SQuAD JSON file"):
        SquadDataset(str(tmp_path)).load()


def test_load_once_reloads_an_edited_file(tmp_path):
    path = _write(tmp_path, _article())
    assert len(load_once(SquadDataset(str(path))).queries) == 2
    _write(tmp_path, _article(dog_qas=[]))  # another size: the remembered dataset is stale
    assert len(load_once(SquadDataset(str(path))).queries) == 1


def test_a_dataset_of_few_questions_is_said_to_give_intervals_that_mean_little_once(tmp_path, caplog):
    dataset = load_once(SquadDataset(str(_write(tmp_path, _article()))))
    warn_if_few_questions(dataset)
    warn_if_few_questions(dataset)
    assert caplog.text.count("has 2 question(s): a mean over so few, its 95% interval and any comparison") == 1
