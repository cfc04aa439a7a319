"""The questions of a `dataset=files` folder, each citing its evidence as quotes of its documents.

`questions.jsonl` holds our records:

    {"id": "q1", "question": "...", "answers": ["..."],
     "evidence": [{"doc": "reports/2023.pdf", "quote": "...", "page": 12}]}

`doc` is the path, or the path or file name without its suffix when that names one document; `page` counts from 1;
`answer` (one string) may stand for `answers`, `metadata` holds anything of your own, and any other field is refused.
FinanceBench's rows load as published (`financebench_id`, `doc_name`, and `evidence` holding `evidence_text` and
`evidence_page_num` counted from 0, as a list or a Python-literal string). A CSV has a row per piece of evidence,
columns `id`, `question`, `doc`, `quote` and optionally `page` and `answer`; rows of one id are one question.
Each problem is refused naming the file, the line and the field.
"""

from __future__ import annotations

import ast
import csv
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsweep.data.base import DatasetError
from ragsweep.data.native import read_answers
from ragsweep.data.reading import field, known_fields, listed_objects, read_jsonl


@dataclass(frozen=True)
class Evidence:
    """A quote a question cites: its document's id, the page (0-based, None when not given) and where it was read."""

    doc: str
    quote: str
    page: int | None
    where: str


@dataclass(frozen=True)
class Asked:
    """A question as its file gives it, its evidence still quotes to be found in a parser's text."""

    id: str
    question: str
    answers: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    where: str


class DocumentNames:
    """A cited document's id from its path, its path without the suffix, or its file name without the suffix,
    when that names one document."""

    def __init__(self, doc_ids: list[str]) -> None:
        self.ids = set(doc_ids)
        self.names: dict[str, set[str]] = defaultdict(set)
        for doc_id in doc_ids:
            stem = doc_id.rsplit(".", 1)[0] if "." in doc_id.rsplit("/", 1)[-1] else doc_id
            for name in (stem, stem.rsplit("/", 1)[-1]):
                self.names[name].add(doc_id)

    def resolve(self, name: str, where: str) -> str:
        if name in self.ids:
            return name
        found = self.names.get(name, set())
        if len(found) == 1:
            return next(iter(found))
        if found:
            raise DatasetError(f"{where}: {name!r} names {len(found)} documents ({', '.join(sorted(found))}); "
                               "give the path relative to dataset.path")
        from rapidfuzz import process

        close = process.extractOne(name, sorted(self.ids | set(self.names)))
        hint = f"; did you mean {close[0]!r}?" if close and close[1] >= 80 else ""
        raise DatasetError(f"{where}: unknown document {name!r}; name a file under dataset.path by its path "
                           f"relative to it{hint}")


def read_questions(path: Path, names: DocumentNames) -> Iterator[Asked]:
    """The questions of questions.jsonl (ours or FinanceBench's rows, told by their fields) or questions.csv."""
    if path.suffix == ".csv":
        yield from _csv_questions(path, names)
        return
    for number, record in read_jsonl(path):
        where = f"{path}:{number}"
        yield (_financebench(record, where, names) if "financebench_id" in record or "doc_name" in record
               else _ours(record, where, names))


QUESTION_FIELDS = ("id", "question", "answers", "answer", "evidence")
EVIDENCE_FIELDS = ("doc", "quote", "page")
MEANT_IN_QUESTION = {"query": "question", "text": "question", "qid": "id", "query_id": "id",
                     "references": "evidence", "quotes": "evidence", "ground_truth": "answers"}
MEANT_IN_EVIDENCE = {"doc_id": "doc", "document": "doc", "file": "doc", "path": "doc", "text": "quote",
                     "content": "quote", "evidence_text": "quote", "page_number": "page", "page_num": "page"}


def _ours(record: dict[str, Any], where: str, names: DocumentNames) -> Asked:
    known_fields(record, QUESTION_FIELDS, where, MEANT_IN_QUESTION, ("metadata",), own="metadata")
    cited = []
    for _, at, item in listed_objects(record, "evidence", where, "doc, quote and optionally page",
                                      "every question needs at least one quote"):
        known_fields(item, EVIDENCE_FIELDS, at, MEANT_IN_EVIDENCE)
        cited.append(_evidence(item, "doc", "quote", "page", 1, at, names))
    return Asked(str(field(record, "id", where, (str, int))), field(record, "question", where),
                 read_answers(record, where), tuple(cited), where)


def _financebench(record: dict[str, Any], where: str, names: DocumentNames) -> Asked:
    """A FinanceBench row: `evidence` a list (or its Python literal) of `evidence_text`, `evidence_page_num`
    (0-based) and `doc_name` (the PDF's name without .pdf)."""
    evidence = record.get("evidence")
    if isinstance(evidence, str):
        try:
            record = {**record, "evidence": ast.literal_eval(evidence)}
        except (ValueError, SyntaxError):
            raise DatasetError(f"{where}: field 'evidence' is not a Python-literal list") from None
    cited = [_evidence({"doc_name": record.get("doc_name"), **item}, "doc_name", "evidence_text", "evidence_page_num",
                       0, at, names)
             for _, at, item in listed_objects(record, "evidence", where, "evidence_text, evidence_page_num and "
                                               "doc_name", "every question needs at least one piece of evidence")]
    question_id = record.get("financebench_id", record.get("id"))
    if question_id is None:
        raise DatasetError(f"{where}: missing field 'financebench_id'")
    return Asked(str(question_id), field(record, "question", where), read_answers(record, where), tuple(cited), where)


def _evidence(item: dict[str, Any], doc_key: str, quote_key: str, page_key: str, first_page: int, where: str,
              names: DocumentNames) -> Evidence:
    doc = names.resolve(field(item, doc_key, where), f"{where} {doc_key}")
    quote = field(item, quote_key, where)
    if not quote.strip():
        raise DatasetError(f"{where}: field {quote_key!r} is empty; quote the evidence")
    page = item.get(page_key)
    if page is not None:
        if isinstance(page, bool) or not isinstance(page, int) or page < first_page:
            raise DatasetError(f"{where}: field {page_key!r} must be a page number counted from {first_page}, "
                               f"got {page!r}")
        page -= first_page
    return Evidence(doc, quote, page, where)


CSV_COLUMNS = ("id", "question", "doc", "quote")


def _csv_questions(path: Path, names: DocumentNames) -> Iterator[Asked]:
    """questions.csv: a row per piece of evidence, rows of one id one question (its question text the same)."""
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in CSV_COLUMNS if column not in (reader.fieldnames or ())]
        if missing:
            raise DatasetError(f"{path}: missing column(s) {', '.join(missing)}; the header needs "
                               f"{', '.join(CSV_COLUMNS)} (and optionally page, answer)")
        rows: dict[str, list[tuple[str, dict[str, str]]]] = {}
        for number, row in enumerate(reader, start=2):
            rows.setdefault(row["id"], []).append((f"{path}:{number}", row))
    for question_id, cited in rows.items():
        where, first = cited[0]
        evidence = []
        for at, row in cited:
            if row["question"] != first["question"]:
                raise DatasetError(f"{at}: id {question_id!r} asks another question than at {where}; give each "
                                   "question its own id")
            page = row.get("page") or None
            if page is not None and not page.strip().isdigit():
                raise DatasetError(f"{at}: column 'page' must be a page number counted from 1, got {page!r}")
            item = {"doc": row["doc"], "quote": row["quote"], "page": int(page) if page is not None else None}
            evidence.append(_evidence(item, "doc", "quote", "page", 1, at, names))
        answer = (first.get("answer") or "").strip()
        yield Asked(question_id, first["question"], (answer,) if answer else (), tuple(evidence), where)
