"""ragsweep's own format: `documents/*.txt` (id = file stem) and `queries.jsonl`.

Each line of queries.jsonl:
    {"id": "q1", "question": "...", "references": [{"doc_id": "a", "start": 0, "end": 42, "content": "..."}],
     "answers": ["..."], "corpus": "..."}
`content` (optional, recommended) is checked against the document text; `answers` (or one string
`answer`) and `corpus` are optional. Offsets are Python character offsets into the file read as UTF-8, end exclusive.
"""

from __future__ import annotations

from pathlib import Path

from ragsweep.data.base import DatasetError, build_dataset, check_span, field, read_jsonl, read_text, require_dir, require_file
from ragsweep.types import Dataset, Document, Query, Span


class NativeDataset:
    """Your own documents and span-annotated questions.

    Args:
        path: Folder holding `documents/*.txt` and `queries.jsonl`.
    """

    def __init__(self, path: str) -> None:
        self.path = path

    def load(self) -> Dataset:
        folder = require_dir(self.path, "dataset.path", "documents/*.txt and queries.jsonl")
        paths = sorted((folder / "documents").glob("*.txt"))
        if not paths:
            raise DatasetError(f"{folder / 'documents'}: no *.txt documents found")
        located = [(str(path), Document(path.stem, read_text(path))) for path in paths]
        documents = {document.id: document for _, document in located}
        queries = read_queries(require_file(folder / "queries.jsonl", "one JSON question per line"), documents)
        return build_dataset(folder.name, located, queries, str(folder))


def read_queries(path: Path, documents: dict[str, Document]) -> list[tuple[str, Query]]:
    """Parse and check queries.jsonl against the documents it points into; each query with its file:line."""
    queries = []
    for number, record in read_jsonl(path):
        where = f"{path}:{number}"
        references = field(record, "references", where, list)
        if not references:
            raise DatasetError(f"{where}: field 'references' is empty; every question needs at least one span")
        spans = []
        for i, ref in enumerate(references):
            at = f"{where} references[{i}]"
            if not isinstance(ref, dict):
                raise DatasetError(f"{at}: expected an object with doc_id, start, end")
            span = Span(field(ref, "doc_id", at), field(ref, "start", at, int), field(ref, "end", at, int))
            content = field(ref, "content", at) if "content" in ref else None
            spans.append(check_span(span, documents, at, content))
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
