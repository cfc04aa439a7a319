"""BEIR-format datasets: `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`.

BEIR judges whole documents, so a relevant document's whole text is its reference span. Queries
without a positive judgement in the split are skipped, as BEIR's own evaluation does. Such a span is
built from the document itself and carries no offsets or text from the file, so it cannot mismatch:
`on_span_mismatch` and `repair_window` are accepted (and checked) only so every loader takes the
same keys.
"""

from __future__ import annotations

import csv
from pathlib import Path

from ragsweep.data.base import DatasetError
from ragsweep.data.assembly import build_dataset
from ragsweep.data.question_choice import QuestionChoice
from ragsweep.data.reading import field, read_jsonl, read_text, require_dir, require_file
from ragsweep.data.spans import span_options
from ragsweep.types import Dataset, Document, Query, Span


class BeirDataset:
    """Args:
    path: Folder of one BEIR dataset (e.g. scifact).
    split: Which `qrels/<split>.tsv` to score.
    on_span_mismatch: `error` or `repair`; nothing can mismatch here (whole-document references).
    repair_window: Characters (>= 0); unused, as above.
    limit, sample, seed: Ask only the first `limit` questions, or `sample` drawn with `seed`; see `QuestionChoice`.
    """

    def __init__(self, path: str, split: str = "test", on_span_mismatch: str = "error",
                 repair_window: int = 10,
                 limit: int | None = None, sample: int | None = None, seed: int = 0) -> None:
        span_options(on_span_mismatch, repair_window)
        self.path = path
        self.split = split
        self.on_span_mismatch = on_span_mismatch
        self.repair_window = repair_window
        self.questions = QuestionChoice(limit, sample, seed)

    def load(self) -> Dataset:
        folder = require_dir(self.path, "dataset.path", "corpus.jsonl, queries.jsonl and qrels/")
        documents, located = {}, []
        corpus_path = require_file(folder / "corpus.jsonl", "one JSON document per line")
        for number, record in read_jsonl(corpus_path):
            where = f"{corpus_path}:{number}"
            doc_id = str(field(record, "_id", where, (str, int)))
            if doc_id in documents:
                raise DatasetError(f"{where}: duplicate document _id {doc_id!r}")
            title, text = record.get("title") or "", field(record, "text", where)
            documents[doc_id] = Document(doc_id, f"{title}\n\n{text}" if title else text)
            located.append((where, documents[doc_id]))
        relevant = _read_qrels(require_file(folder / "qrels" / f"{self.split}.tsv", "query-id, corpus-id, score"), documents)
        queries_path = require_file(folder / "queries.jsonl", "one JSON query per line")
        queries = []
        for number, record in read_jsonl(queries_path):
            query_id = str(field(record, "_id", f"{queries_path}:{number}", (str, int)))
            if query_id in relevant:
                spans = tuple(Span(doc, 0, len(documents[doc].text)) for doc in relevant[query_id])
                where = f"{queries_path}:{number}"
                queries.append((where, Query(query_id, field(record, "text", where), spans, corpus=folder.name)))
        return self.questions.apply(build_dataset(folder.name, located, queries, str(folder)))


def _read_qrels(path: Path, documents: dict[str, Document]) -> dict[str, list[str]]:
    relevant: dict[str, list[str]] = {}
    rows = csv.reader(read_text(path).splitlines(), delimiter="\t")
    header = next(rows, None)
    if header is None or header[:3] != ["query-id", "corpus-id", "score"]:
        raise DatasetError(f"{path}: first line must be the header 'query-id\\tcorpus-id\\tscore', got {header}")
    for number, row in enumerate(rows, start=2):
        if len(row) < 3:
            raise DatasetError(f"{path}:{number}: expected 3 tab-separated columns, got {row}")
        query_id, doc_id, score = row[0], row[1], row[2]
        if doc_id not in documents:
            raise DatasetError(f"{path}:{number}: unknown corpus-id {doc_id!r}; it must be an _id in corpus.jsonl")
        try:
            positive = int(score) > 0
        except ValueError:
            raise DatasetError(f"{path}:{number}: score {score!r} is not an integer") from None
        if positive:
            relevant.setdefault(query_id, []).append(doc_id)
    return relevant
