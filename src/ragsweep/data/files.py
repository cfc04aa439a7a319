"""A folder of documents as they are (PDF, HTML, Word, Markdown, text), with questions citing evidence as quotes.

`dataset.path` holds the documents at any depth (a document's id is its path relative to the folder) and
`questions.jsonl` or `questions.csv` (or `dataset.questions` names the file): ours, FinanceBench's rows or a CSV,
read by `ragsweep.data.question_files`, where their formats are.

The parser's text is the configuration's documents: each quote is found in it (`ragsweep.data.evidence`), and a
quote it lost stays in the question as evidence nothing can retrieve, so parsers are compared on the same questions.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path

from ragsweep.cache import StageCache
from ragsweep.data.assembly import build_dataset
from ragsweep.data.base import DatasetError
from ragsweep.data.evidence import find_quote
from ragsweep.data.question_choice import QuestionChoice
from ragsweep.data.question_files import Asked, DocumentNames, read_questions
from ragsweep.data.reading import require_dir
from ragsweep.parsing.base import Parsed, UnreadableFile
from ragsweep.parsing.by_type import ByFileType
from ragsweep.parsing.files import parse_files
from ragsweep.types import Dataset, PagedDocument, Query, Span

log = logging.getLogger(__name__)

QUESTION_FILES = ("questions.jsonl", "questions.csv")
SHOWN = 5  # files, pages or questions a warning names before it says how many more


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
        asked = list(read_questions(questions_file, DocumentNames([_doc_id(folder, p) for p in paths])))
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
            quotes = tuple((evidence.doc, evidence.quote, evidence.page) for evidence in question.evidence)
            queries.append((question.where, Query(question.id, question.question, tuple(spans), question.answers,
                                                  corpus, tuple(lost), quotes)))
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
        raise DatasetError(f"{folder}: no questions.jsonl or questions.csv; add one (format: `ragsweep docs "
                           "dataset`, its section 'files: your documents as they are')")
    if len(present) > 1:
        raise DatasetError(f"{folder}: both questions.jsonl and questions.csv; keep one")
    return present[0]
