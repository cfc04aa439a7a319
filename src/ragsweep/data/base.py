"""The dataset stage's contract and the checks every loader shares.

A loader turns files into a `Dataset`; it never scores anything. Each problem is reported with
the file, the record and the field, so a user can fix their data without reading our code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from ragsweep.memo import remember
from ragsweep.types import Dataset, Document, Query, Span


class DatasetError(ValueError):
    """Bad input data; the message names the file, record and field, and how to fix it."""


class DatasetLoader(Protocol):
    def load(self) -> Dataset: ...


def require_dir(path: str | Path, key: str, expected: str) -> Path:
    folder = Path(path).expanduser()
    if folder.is_file():
        raise DatasetError(f"{key}={folder} is a file; point {key} at the folder holding {expected}")
    if not folder.is_dir():
        raise DatasetError(f"{key}={folder} does not exist; point {key} at a folder holding {expected}")
    return folder


def require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise DatasetError(f"{path}: missing; it should hold {what}")
    return path


def read_text(path: Path) -> str:
    """UTF-8 text with universal newlines, as Python's `open()` reads it (offsets depend on this)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except UnicodeDecodeError as error:
        raise DatasetError(f"{path}: not UTF-8 ({error.reason} at byte {error.start}); re-save it as UTF-8") from None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for each non-blank line."""
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DatasetError(f"{path}:{number}: invalid JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise DatasetError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        yield number, record


def field(record: dict[str, Any], name: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
    if name not in record:
        raise DatasetError(f"{where}: missing field {name!r}")
    value = record[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        raise DatasetError(
            f"{where}: field {name!r} must be {'/'.join(k.__name__ for k in kinds)}, got {value!r}"
        )
    return value


def check_span(
    span: Span, documents: dict[str, Document], where: str, content: str | None = None
) -> Span:
    """A reference span must lie inside a known document and, if given, match its stored text."""
    document = documents.get(span.doc_id)
    if document is None:
        raise DatasetError(f"{where}: unknown doc_id {span.doc_id!r}; it must name one of the documents")
    if not 0 <= span.start < span.end <= len(document.text):
        raise DatasetError(
            f"{where}: span [{span.start}, {span.end}) is invalid for document {span.doc_id!r} of "
            f"{len(document.text)} characters; need 0 <= start < end <= {len(document.text)}"
        )
    if content is not None and document.text[span.start : span.end] != content:
        found = document.text[span.start : span.end]
        raise DatasetError(
            f"{where}: content {_clip(content)!r} differs from the document text at "
            f"[{span.start}, {span.end}): {_clip(found)!r}; fix the offsets or the content"
        )
    return span


def build_dataset(name: str, documents: Iterable[tuple[str, Document]], queries: Iterable[tuple[str, Query]],
                  source: str) -> Dataset:
    """Assemble a dataset from (where, item) pairs, rejecting duplicate ids and empty texts where they are
    (`where` is the file, or the file and line, that the item came from)."""
    by_id: dict[str, Document] = {}
    found: dict[str, str] = {}
    for where, document in documents:
        if document.id in by_id:
            raise DatasetError(f"{where}: duplicate document id {document.id!r} (also {found[document.id]})")
        if not document.text.strip():
            raise DatasetError(f"{where}: document {document.id!r} is empty; give it text or remove it")
        by_id[document.id], found[document.id] = document, where
    asked: dict[str, str] = {}
    query_list = []
    for where, query in queries:
        if query.id in asked:
            raise DatasetError(f"{where}: duplicate query id {query.id!r} (first at {asked[query.id]}); "
                               "give each question its own id")
        if not query.text.strip():
            raise DatasetError(f"{where}: query {query.id!r} has an empty question")
        asked[query.id] = where
        query_list.append(query)
    if not query_list:
        raise DatasetError(f"{source}: no queries found; a dataset needs at least one question")
    return Dataset(name, by_id, query_list)


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_LOADED: dict[tuple, Dataset] = {}


def load_once(loader: DatasetLoader) -> Dataset:
    """`loader.load()`, remembered for this process while the loader's files are unchanged.

    A sweep runs many jobs on one dataset in one process; reading and re-validating thousands of
    spans per job is wasted. The key holds every file's size and mtime, so edited data is reloaded.
    """
    settings = tuple(sorted((k, str(v)) for k, v in vars(loader).items()))
    folder = Path(str(getattr(loader, "path", ""))).expanduser()
    files = tuple(sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file())) \
        if getattr(loader, "path", None) and folder.is_dir() else ()
    return remember(_LOADED, (type(loader).__qualname__, settings, files), loader.load, limit=4)
