"""SQuAD v1.1 / v2.0 JSON: `data[].title`, `paragraphs[].context`, `qas[].{id, question, answers, is_impossible}`.

Each paragraph is a document with id `<title>#<paragraph index>` (or, with `join_paragraphs`, each
article is one document with id `<title>`, its paragraphs joined by a blank line and answer offsets
shifted). Files without titles name documents by `paragraphs[].document_id`, else `article-<index>`. An answer's `[answer_start, answer_start + len(text))` is a reference span, checked
against the context; its text is a reference answer. Unanswerable v2.0 questions (`is_impossible`,
or no answers) have nothing to retrieve: they are skipped and counted (`unanswerable_skipped`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ragsweep.data.base import DatasetError
from ragsweep.data.assembly import build_dataset
from ragsweep.data.question_choice import QuestionChoice
from ragsweep.data.reading import field, read_text
from ragsweep.data.spans import SpanChecker, span_options
from ragsweep.types import Dataset, Document, Query, Span

log = logging.getLogger(__name__)

SEPARATOR = "\n\n"  # between an article's paragraphs under join_paragraphs


class SquadDataset:
    """Questions with answer spans over Wikipedia paragraphs, in SQuAD's JSON format.

    Args:
        path: The SQuAD JSON file (e.g. `dev-v2.0.json`).
        join_paragraphs: One document per article instead of one per paragraph.
        on_span_mismatch: An `answer_start` whose text differs from the context there: `error` or
            `repair` (move it to the nearest exact occurrence of its text), as for native.
        repair_window: How far a span may move under `repair`, in characters (>= 0).
        limit, sample, seed: Ask only the first `limit` questions, or `sample` drawn with `seed` (stratified
            by corpus); see `QuestionChoice`.
    """

    def __init__(self, path: str, join_paragraphs: bool = False, on_span_mismatch: str = "error",
                 repair_window: int = 10,
                 limit: int | None = None, sample: int | None = None, seed: int = 0) -> None:
        span_options(on_span_mismatch, repair_window)
        if not isinstance(join_paragraphs, bool):
            raise ValueError(f"dataset.join_paragraphs must be true or false, got {join_paragraphs!r}")
        self.path = path
        self.join_paragraphs = join_paragraphs
        self.on_span_mismatch = on_span_mismatch
        self.repair_window = repair_window
        self.questions = QuestionChoice(limit, sample, seed)

    def load(self) -> Dataset:
        path = _require_json(self.path)
        located, questions = [], []  # questions: (record, doc_id, shift, qa, qa's location)
        for a, article in enumerate(field(_read_json(path), "data", str(path), list)):
            at = f"{path} data[{a}]"
            if not isinstance(article, dict):
                raise DatasetError(f"{at}: expected an article object with title and paragraphs")
            paragraphs = field(article, "paragraphs", at, list)
            title = _article_name(article, paragraphs, a, at)
            at = f"{path} article {title!r}"
            contexts, shift = [], 0  # shift: where this paragraph starts in the article's joined text
            for p, paragraph in enumerate(paragraphs):
                where = f"{at} paragraphs[{p}]"
                if not isinstance(paragraph, dict):
                    raise DatasetError(f"{where}: expected a paragraph object with context and qas")
                contexts.append(field(paragraph, "context", where))
                doc_id = title if self.join_paragraphs else _paragraph_id(article, paragraph, title, p, where)
                if not self.join_paragraphs:
                    located.append((where, Document(doc_id, contexts[-1])))
                questions += [(title, doc_id, shift if self.join_paragraphs else 0, qa, f"{where} qas[{q}]")
                              for q, qa in enumerate(field(paragraph, "qas", where, list))]
                shift += len(contexts[-1]) + len(SEPARATOR)
            if self.join_paragraphs:
                located.append((at, Document(title, SEPARATOR.join(contexts))))
        checker = SpanChecker({d.id: d for _, d in located}, self.on_span_mismatch, self.repair_window)
        queries = [query for question in questions if (query := _query(path, checker, *question))]
        skipped = len(questions) - len(queries)
        if skipped:
            log.info("%s: skipped %d unanswerable question(s) of %d", path, skipped, len(questions))
        loading = {"unanswerable_skipped": skipped, **checker.finish()}
        return self.questions.apply(build_dataset(path.stem, located, queries, str(path), loading, checker.moved))


def _article_name(article: dict, paragraphs: list, index: int, at: str) -> str:
    """The article's `title`; files without one name it by its first paragraph's `document_id`, else
    `article-<index>`."""
    if "title" in article:
        return field(article, "title", at)
    first = paragraphs[0] if paragraphs and isinstance(paragraphs[0], dict) else {}
    return str(first["document_id"]) if "document_id" in first else f"article-{index}"


def _paragraph_id(article: dict, paragraph: dict, title: str, index: int, where: str) -> str:
    """A paragraph's document id: `<title>#<index>`, or its own `document_id` when the article has no title."""
    if "title" not in article and "document_id" in paragraph:
        return str(field(paragraph, "document_id", where, (str, int)))
    return f"{title}#{index}"


def _query(path: Path, checker: SpanChecker, title: str, doc_id: str, shift: int, qa: Any,
           at: str) -> tuple[str, Query] | None:
    """One question with its reference spans and answers; None when it is unanswerable."""
    if not isinstance(qa, dict):
        raise DatasetError(f"{at}: expected a question object with id, question and answers")
    qid = str(field(qa, "id", at, (str, int)))
    record = f"{path} article {title!r} question {qid!r}"
    impossible = qa.get("is_impossible", False)
    if not isinstance(impossible, bool):
        raise DatasetError(f"{record}: field 'is_impossible' must be true or false, got {impossible!r}")
    answers = [] if impossible else field(qa, "answers", record, list)
    if not answers:
        return None
    spans, texts, seen = [], [], set()
    for i, answer in enumerate(answers):
        name = f"answers[{i}]"
        if not isinstance(answer, dict):
            raise DatasetError(f"{record} {name}: expected an object with text and answer_start")
        text, start = field(answer, "text", f"{record} {name}"), field(answer, "answer_start", f"{record} {name}", int)
        if not text:
            raise DatasetError(f"{record} {name}: field 'text' is empty; give the answer's text")
        if (start, text) not in seen:  # annotators often mark the same span; check and count it once
            seen.add((start, text))
            spans.append(checker.check(Span(doc_id, shift + start, shift + start + len(text)), record, name, text))
        texts.append(text)
    query = Query(qid, field(qa, "question", record), tuple(dict.fromkeys(spans)), tuple(dict.fromkeys(texts)), title)
    return record, query


def _require_json(value: str) -> Path:
    path = Path(value).expanduser()
    if path.is_dir():
        raise DatasetError(f"dataset.path={path} is a folder; point dataset.path at the SQuAD JSON file")
    if not path.is_file():
        raise DatasetError(f"dataset.path={path} does not exist; point dataset.path at a SQuAD JSON file")
    return path


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise DatasetError(f"{path}: invalid JSON ({error.msg} at line {error.lineno}, column {error.colno})") from None
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: expected a SQuAD object with a 'data' list, got {type(data).__name__}")
    return data
