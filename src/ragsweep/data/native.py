"""ragsweep's own format: `documents/**/*.txt` and `queries.jsonl`.

A document's id is its path under documents/ without `.txt` (`animals`, `guides/install`), as `dataset=files` names
a document by its path. Each line of queries.jsonl:
    {"id": "q1", "question": "...", "references": [{"doc_id": "a", "start": 0, "end": 42, "content": "..."}],
     "answers": ["..."], "corpus": "..."}
`content` (optional, recommended) is checked against the document text (`on_span_mismatch` says what a
mismatch does); `answers` (or one string `answer`), `corpus` and `metadata` (anything, not read) are optional; any
other field is refused. Offsets are Python character offsets into the file read as UTF-8 with its line endings
read as \n, end exclusive.
"""

from __future__ import annotations

from pathlib import Path

from ragsweep.data.base import DatasetError
from ragsweep.data.assembly import build_dataset
from ragsweep.data.question_choice import QuestionChoice
from ragsweep.data.reading import (
    FileDocument, field, known_fields, listed_objects, read_jsonl, read_text, require_dir, require_file,
)
from ragsweep.data.spans import SpanChecker, span_options
from ragsweep.types import Dataset, Document, Query, Span


class NativeDataset:
    """Your own documents and span-annotated questions.

    Args:
        path: Folder holding `documents/` (`*.txt` at any depth) and `queries.jsonl`.
        on_span_mismatch: A reference whose `content` differs from the document there: `error` (fail,
            naming every affected record's count) or `repair` (move it to its text nearby).
        repair_window: How far a span may move under `repair`, in characters (>= 0).
        limit, sample, seed: Ask only the first `limit` questions, or `sample` drawn with `seed` (stratified
            by corpus); see `QuestionChoice`.
    """

    def __init__(self, path: str, on_span_mismatch: str = "error", repair_window: int = 10,
                 limit: int | None = None, sample: int | None = None, seed: int = 0) -> None:
        span_options(on_span_mismatch, repair_window)
        self.path = path
        self.on_span_mismatch = on_span_mismatch
        self.repair_window = repair_window
        self.questions = QuestionChoice(limit, sample, seed)

    def load(self) -> Dataset:
        folder = require_dir(self.path, "dataset.path", "documents/*.txt and queries.jsonl")
        documents = read_documents(folder / "documents", "dataset.path")
        located = [(document.path, document) for document in documents.values()]
        checker = SpanChecker(documents, self.on_span_mismatch, self.repair_window)
        queries = read_queries(require_file(folder / "queries.jsonl", "one JSON question per line"), checker)
        dataset = build_dataset(folder.name, located, queries, str(folder), checker.finish(), checker.moved)
        return self.questions.apply(dataset)


def read_documents(folder: str | Path, key: str) -> dict[str, FileDocument]:
    """The UTF-8 `*.txt` files under `folder` by id (the path under it without .txt), in path order, each read again
    when its text is needed (`FileDocument`); hidden folders (.git, .ipynb_checkpoints) are left."""
    root = require_dir(folder, key, "UTF-8 *.txt documents")
    paths = sorted(path for path in root.rglob("*.txt") if path.is_file()
                   and not any(part.startswith(".") for part in path.relative_to(root).parts[:-1]))
    if not paths:
        raise DatasetError(f"{folder}: no *.txt documents found (at any depth)")
    ids = (path.relative_to(root).with_suffix("").as_posix() for path in paths)
    return {doc_id: FileDocument(doc_id, str(path), read_text(path)) for doc_id, path in zip(ids, paths)}


QUESTION_FIELDS = ("id", "question", "references", "answers", "answer", "corpus")
KEPT_FIELDS = ("metadata", "type", "difficulty", "excerpt_similarity")  # a user's own; how `generate` drafted it
REFERENCE_FIELDS = ("doc_id", "start", "end", "content")
MEANT_IN_QUESTION = {"query": "question", "text": "question", "question_text": "question", "qid": "id",
                     "query_id": "id", "_id": "id", "refs": "references", "spans": "references",
                     "evidence": "references", "contexts": "references", "ground_truth": "answers",
                     "gold_answers": "answers", "reference_answers": "answers"}
MEANT_IN_REFERENCE = {"text": "content", "quote": "content", "span_text": "content", "answer_text": "content",
                      "doc": "doc_id", "document": "doc_id", "document_id": "doc_id", "docid": "doc_id",
                      "file": "doc_id", "begin": "start", "offset": "start", "start_index": "start",
                      "start_char": "start", "char_start": "start", "stop": "end", "end_index": "end",
                      "end_char": "end", "char_end": "end"}


def read_queries(path: Path, checker: SpanChecker) -> list[tuple[str, Query]]:
    """Parse queries.jsonl and check its spans with `checker`; each query with its file:line. Call
    `checker.finish` afterwards: span mismatches are raised there, all counted."""
    queries = []
    for number, record in read_jsonl(path):
        where = f"{path}:{number}"
        known_fields(record, QUESTION_FIELDS, where, MEANT_IN_QUESTION, KEPT_FIELDS, own="metadata")
        spans = []
        for i, at, ref in listed_objects(record, "references", where, "doc_id, start, end",
                                         "every question needs at least one span"):
            known_fields(ref, REFERENCE_FIELDS, at, MEANT_IN_REFERENCE)
            span = Span(field(ref, "doc_id", at), field(ref, "start", at, int), field(ref, "end", at, int))
            content = field(ref, "content", at) if "content" in ref else None
            spans.append(checker.check(span, where, f"references[{i}]", content))
        answers = read_answers(record, where)
        corpus = field(record, "corpus", where) if "corpus" in record else spans[0].doc_id
        queries.append((where, Query(str(field(record, "id", where, (str, int))), field(record, "question", where),
                             tuple(spans), answers, corpus)))
    return queries


def read_answers(record: dict, where: str) -> tuple[str, ...]:
    """Reference answers: `answers` (a list of strings) or `answer` (one string); none is fine."""
    if record.get("answers") is not None:
        answers = field(record, "answers", where, list)
        for i, answer in enumerate(answers):
            if not isinstance(answer, str) or not answer.strip():
                raise DatasetError(f"{where}: answers[{i}] must be a non-empty string, got {answer!r}")
        return tuple(answers)
    return (field(record, "answer", where),) if record.get("answer") is not None else ()
