"""ragsweep's own format: `documents/*.txt` (id = file stem) and `queries.jsonl`.

Each line of queries.jsonl:
    {"id": "q1", "question": "...", "references": [{"doc_id": "a", "start": 0, "end": 42, "content": "..."}],
     "answers": ["..."], "corpus": "..."}
`content` (optional, recommended) is checked against the document text (`on_span_mismatch` says what a
mismatch does); `answers` (or one string `answer`) and `corpus` are optional. Offsets are Python
character offsets into the file read as UTF-8, end exclusive.
"""

from __future__ import annotations

from pathlib import Path

from ragsweep.data.base import DatasetError
from ragsweep.data.assembly import build_dataset
from ragsweep.data.question_choice import QuestionChoice
from ragsweep.data.reading import (
    FileDocument, field, listed_objects, read_jsonl, read_text, require_dir, require_file,
)
from ragsweep.data.spans import SpanChecker, span_options
from ragsweep.types import Dataset, Document, Query, Span


class NativeDataset:
    """Your own documents and span-annotated questions.

    Args:
        path: Folder holding `documents/*.txt` and `queries.jsonl`.
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
        located = [(str(folder / "documents" / f"{d.id}.txt"), d) for d in documents.values()]
        checker = SpanChecker(documents, self.on_span_mismatch, self.repair_window)
        queries = read_queries(require_file(folder / "queries.jsonl", "one JSON question per line"), checker)
        dataset = build_dataset(folder.name, located, queries, str(folder), checker.finish(str(folder)))
        return self.questions.apply(dataset)


def read_documents(folder: str | Path, key: str) -> dict[str, Document]:
    """The UTF-8 `*.txt` files of `folder` by id (the file name without .txt), in id order, each read again
    when its text is needed (`FileDocument`)."""
    paths = sorted(require_dir(folder, key, "UTF-8 *.txt documents").glob("*.txt"))
    if not paths:
        raise DatasetError(f"{folder}: no *.txt documents found")
    return {path.stem: FileDocument(path.stem, str(path), read_text(path)) for path in paths}


def read_queries(path: Path, checker: SpanChecker) -> list[tuple[str, Query]]:
    """Parse queries.jsonl and check its spans with `checker`; each query with its file:line. Call
    `checker.finish` afterwards: span mismatches are raised there, all counted."""
    queries = []
    for number, record in read_jsonl(path):
        where = f"{path}:{number}"
        spans = []
        for i, at, ref in listed_objects(record, "references", where, "doc_id, start, end",
                                         "every question needs at least one span"):
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
