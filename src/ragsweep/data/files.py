"""A folder of documents as they are (PDF, HTML, Word, Markdown, text), with questions citing evidence as quotes.

`dataset.path` holds the documents at any depth (a document's id is its path relative to the folder) and
`questions.jsonl` or `questions.csv`. A question's evidence is a quote of a document, and a page where it has one:

    {"id": "q1", "question": "...", "answers": ["..."],
     "evidence": [{"doc": "reports/2023.pdf", "quote": "...", "page": 12}]}

`doc` is the path, or the path or file name without its suffix when that names one document; `page` counts from 1.
FinanceBench's rows load as published (`financebench_id`, `doc_name`, and `evidence` holding `evidence_text` and
`evidence_page_num` counted from 0, as a list or a Python-literal string). A CSV has a row per piece of evidence,
columns `id`, `question`, `doc`, `quote` and optionally `page` and `answer`; rows of one id are one question.

The parser's text is the configuration's documents: each quote is found in it (`ragsweep.data.evidence`), and a
quote it lost stays in the question as evidence nothing can retrieve, so parsers are compared on the same questions.
"""

from __future__ import annotations

import ast
import csv
import logging
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsweep.cache import StageCache
from ragsweep.data.base import DatasetError
from ragsweep.data.assembly import build_dataset
from ragsweep.data.question_choice import QuestionChoice
from ragsweep.data.reading import field, listed_objects, read_jsonl, require_dir
from ragsweep.data.evidence import find_quote
from ragsweep.data.native import read_answers
from ragsweep.parsing.base import Parsed, UnreadableFile
from ragsweep.parsing.by_type import ByFileType
from ragsweep.parsing.files import parse_files
from ragsweep.types import Dataset, PagedDocument, Query, Span

log = logging.getLogger(__name__)

QUESTION_FILES = ("questions.jsonl", "questions.csv")
SHOWN = 5  # files, pages or questions a warning names before it says how many more


@dataclass(frozen=True)
class Evidence:
    """A quote a question cites: its document's id, the page (0-based, None when not given) and where it was read."""

    doc: str
    quote: str
    page: int | None
    where: str


@dataclass(frozen=True)
class Asked:
    id: str
    question: str
    answers: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    where: str


class FilesDataset:
    """Your documents as they are, parsed by `parser`, and questions whose evidence is quoted.

    Args:
        path: The folder (see the module).
        parser: Reads each file by its type (`conf/parser/`).
        min_similarity: How alike (0-1, once folded) a stretch of a parser's text must be to a quote to be its
            evidence when no stretch is verbatim (`ragsweep.data.evidence`).
        limit, sample, seed: Ask only the first `limit` questions, or `sample` drawn with `seed`; see `QuestionChoice`.
        cache: Where parsed files are kept (the sweep's stage cache); None parses every time.
    """

    def __init__(self, path: str, parser: ByFileType, questions: str | None = None, min_similarity: float = 0.9,
                 limit: int | None = None, sample: int | None = None, seed: int = 0,
                 cache: StageCache | None = None) -> None:
        if isinstance(min_similarity, bool) or not isinstance(min_similarity, (int, float)) or not (
                0 < min_similarity <= 1):
            raise DatasetError(f"dataset.min_similarity must be in (0, 1], got {min_similarity!r}; e.g. 0.9")
        self.path, self.parser, self.min_similarity = path, parser, float(min_similarity)
        self.questions_file = questions
        self.questions = QuestionChoice(limit, sample, seed)
        self._cache = cache or StageCache("", enabled=False)  # where, not what: not a setting (`load_once`)

    def load(self) -> Dataset:
        folder = require_dir(self.path, "dataset.path", "your documents and questions.jsonl (or .csv)")
        questions_file = self._questions_file(folder)
        paths = self._documents(folder, questions_file)
        asked = list(read_questions(questions_file, _DocumentNames([_doc_id(folder, p) for p in paths])))
        texts = self._parsed(folder, paths)
        documents, loading = _documents_with_text(texts, folder)
        queries, located = self._located(asked, texts, documents)
        loading.update(located)
        located_documents = ((str(folder / doc_id), document) for doc_id, document in documents.items())
        dataset = build_dataset(folder.name, located_documents, queries, str(questions_file), loading)
        return self.questions.apply(dataset)

    def read_documents(self) -> dict[str, PagedDocument]:
        """The folder's documents as this parser reads them, without questions (what `ragsweep generate` drafts
        questions from)."""
        folder = require_dir(self.path, "dataset.path", "your documents")
        return _documents_with_text(self._parsed(folder, self._documents(folder, None)), folder)[0]

    def _questions_file(self, folder: Path) -> Path:
        if self.questions_file is None:
            return _questions_in(folder)
        path = Path(self.questions_file).expanduser()
        if not path.is_file():
            raise DatasetError(f"dataset.questions={path} does not exist; point it at a questions.jsonl or .csv, or "
                               "set dataset.questions=null to read the one in dataset.path")
        if path.suffix not in (".jsonl", ".csv"):
            raise DatasetError(f"dataset.questions={path}: a .jsonl or .csv file is read")
        return path

    def _parsed(self, folder: Path, paths: list[Path]) -> dict[str, Parsed]:
        """Each file's parse by its id; a file the parser cannot read refuses the dataset, naming it."""
        parsed = parse_files(self.parser, paths, self._cache)
        unreadable = [(path, result) for path, result in zip(paths, parsed, strict=True)
                      if isinstance(result, UnreadableFile)]
        if unreadable:
            path, error = unreadable[0]
            raise DatasetError(f"{path}: {error}" + (f" ({len(unreadable)} files cannot be read)"
                                                     if len(unreadable) > 1 else "")
                               + "; fix or remove it, or try another parser (parser=pdfium, pypdf or pdfminer)")
        return {_doc_id(folder, path): result for path, result in zip(paths, parsed, strict=True)}

    def _documents(self, folder: Path, questions_file: Path | None) -> list[Path]:
        """The folder's document files, in id order; a type no parser reads is refused (hidden files are left)."""
        paths = sorted(path for path in folder.rglob("*") if path.is_file() and path != questions_file
                       and not any(part.startswith(".") for part in path.relative_to(folder).parts)
                       and path.name not in QUESTION_FILES)
        for path in paths:
            if self.parser.parser_of(path) is None:
                raise DatasetError(f"{path}: no parser reads {path.suffix or 'a file without a suffix'}; the types "
                                   f"read are {', '.join(self.parser.suffixes)}: remove it or move it out of "
                                   "dataset.path")
        if not paths:
            raise DatasetError(f"{folder}: no documents found; it should hold files of types "
                               f"{', '.join(self.parser.suffixes)} (at any depth)")
        return paths

    def _located(self, asked: list[Asked], texts: dict[str, Parsed], documents: dict[str, PagedDocument]
                 ) -> tuple[list[tuple[str, Query]], dict[str, int]]:
        """Each question with its quotes found in the parsed text: spans where found, the quotes left as lost."""
        queries, lost_ids, exact = [], [], 0
        total = found = 0
        folded: dict[str, dict] = defaultdict(dict)  # each document's windows folded once for all its quotes
        for question in asked:
            spans, lost = [], []
            for evidence in question.evidence:
                total += 1
                parsed = texts[evidence.doc]
                match = None
                if evidence.doc in documents:
                    if evidence.page is not None and evidence.page >= len(parsed.pages):
                        raise DatasetError(f"{evidence.where}: page {evidence.page + 1} of {evidence.doc}, which has "
                                           f"{len(parsed.pages)} page(s) as parsed; fix the page")
                    match = find_quote(parsed.text, evidence.quote, _windows(parsed, evidence.page),
                                       self.min_similarity, folded[evidence.doc])
                if match is None:
                    lost.append(evidence.quote)
                    continue
                found, exact = found + 1, exact + (match.similarity == 1.0)
                spans.append(Span(evidence.doc, match.start, match.end))
            if lost:
                lost_ids.append(question.id)
            corpus = question.evidence[0].doc
            queries.append((question.where, Query(question.id, question.question, tuple(spans), question.answers,
                                                  corpus, tuple(lost))))
        if lost_ids:
            log.warning("%d of %d quoted evidence not found in the parsed documents (at least %.0f%% alike), so "
                        "nothing can retrieve it; question(s) %s: try another parser or lower dataset.min_similarity",
                        total - found, total, 100 * self.min_similarity, _named(lost_ids))
        return queries, {"evidence": total, "evidence_found": found, "evidence_verbatim": exact}


def _windows(parsed: Parsed, page: int | None) -> list[tuple[int, int]]:
    """Where a quote is looked for, in turn: its page, that page with its neighbours, the whole document."""
    whole = [(0, len(parsed.text))]
    if page is None or len(parsed.pages) == 1:
        return whole
    last = len(parsed.pages) - 1
    return [parsed.page_range(page), (parsed.page_range(max(page - 1, 0))[0],
                                      parsed.page_range(min(page + 1, last))[1]), *whole]


def _documents_with_text(texts: dict[str, Parsed], folder: Path) -> tuple[dict[str, PagedDocument], dict[str, int]]:
    """The parsed files that have text, and the counts of files and pages without any, each named in a warning."""
    documents = {doc_id: PagedDocument(doc_id, parsed.text, parsed.pages) for doc_id, parsed in texts.items()
                 if parsed.text.strip()}
    empty = sorted(set(texts) - set(documents))
    blank = [f"{doc_id} p{page + 1}" for doc_id, parsed in texts.items() if doc_id in documents
             for page in parsed.blank_pages]
    if empty:
        log.warning("%d file(s) of %s gave no text (a scan, or only images), so their evidence is lost: %s", len(empty),
                    folder, _named(empty))
    if blank:
        log.warning("%d page(s) gave no text (scanned pages?): %s", len(blank), _named(blank))
    if not documents:
        raise DatasetError(f"{folder}: no file gave any text ({_named(empty)}); scanned documents need OCR first")
    pages = sum(len(parsed.pages) for parsed in texts.values())
    return documents, {"pages": pages, "files_without_text": len(empty), "pages_without_text": len(blank)}


def _named(items: list[str]) -> str:
    return ", ".join(items[:SHOWN]) + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _doc_id(folder: Path, path: Path) -> str:
    return path.relative_to(folder).as_posix()


def _questions_in(folder: Path) -> Path:
    present = [folder / name for name in QUESTION_FILES if (folder / name).is_file()]
    if not present:
        raise DatasetError(f"{folder}: no questions.jsonl or questions.csv; add one (format in "
                           "docs/configuration/dataset.md#your-documents-as-they-are)")
    if len(present) > 1:
        raise DatasetError(f"{folder}: both questions.jsonl and questions.csv; keep one")
    return present[0]


class _DocumentNames:
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


def read_questions(path: Path, names: _DocumentNames) -> Iterator[Asked]:
    """The questions of questions.jsonl (ours or FinanceBench's rows, told by their fields) or questions.csv."""
    if path.suffix == ".csv":
        yield from _csv_questions(path, names)
        return
    for number, record in read_jsonl(path):
        where = f"{path}:{number}"
        yield (_financebench(record, where, names) if "financebench_id" in record or "doc_name" in record
               else _ours(record, where, names))


def _ours(record: dict[str, Any], where: str, names: _DocumentNames) -> Asked:
    cited = [_evidence(item, "doc", "quote", "page", 1, at, names)
             for _, at, item in listed_objects(record, "evidence", where, "doc, quote and optionally page",
                                               "every question needs at least one quote")]
    return Asked(str(field(record, "id", where, (str, int))), field(record, "question", where),
                 read_answers(record, where), tuple(cited), where)


def _financebench(record: dict[str, Any], where: str, names: _DocumentNames) -> Asked:
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
              names: _DocumentNames) -> Evidence:
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


def _csv_questions(path: Path, names: _DocumentNames) -> Iterator[Asked]:
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


def lost_in_every_text(datasets: Sequence[Dataset]) -> dict[str, list[str]]:
    """By dataset name, the questions some of whose quoted evidence none of two or more parses of it holds (the
    datasets of a sweep's parsers): a problem of the dataset, said once, not of a parser."""
    parses: dict[str, dict[str, Dataset]] = defaultdict(dict)
    for dataset in datasets:
        if any(query.lost for query in dataset.queries):
            parses[dataset.name][dataset.documents_fingerprint] = dataset
        else:
            parses[dataset.name]["found"] = dataset  # a parse that lost nothing: nothing is lost everywhere
    found = {}
    for name, by_text in parses.items():
        if len(by_text) < 2 or "found" in by_text:
            continue
        lost = [{(query.id, quote) for query in dataset.queries for quote in query.lost}
                for dataset in by_text.values()]
        everywhere = set.intersection(*lost)
        if everywhere:
            found[name] = sorted({question for question, _ in everywhere})
    return found
