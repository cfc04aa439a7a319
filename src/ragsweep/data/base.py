"""The dataset stage's contract and the checks every loader shares.

A loader turns files into a `Dataset`; it never scores anything. Each problem is reported with
the file, the record and the field, so a user can fix their data without reading our code.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ragsweep.memo import remember
from ragsweep.types import Dataset, Document, Query

log = logging.getLogger(__name__)


class DatasetError(ValueError):
    """Bad input data; the message names the file, record and field, and how to fix it."""


@runtime_checkable
class DatasetLoader(Protocol):
    def load(self) -> Dataset: ...


def require_dir(path: str | Path, key: str, expected: str, missing_hint: str = "") -> Path:
    """`path` as a folder; DatasetError naming `key`, what the folder should hold and, when it is missing,
    `missing_hint` (e.g. where data that does not ship with ragsweep is looked for)."""
    folder = Path(path).expanduser()
    if folder.is_file():
        raise DatasetError(f"{key}={folder} is a file; point {key} at the folder holding {expected}")
    if not folder.is_dir():
        raise DatasetError(f"{key}={folder} does not exist; {missing_hint}point {key} at a folder holding {expected}")
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


class FileDocument(Document):
    """A document read from a UTF-8 file, whose text is read again when asked for.

    A corpus of a million chunks is larger than the memory it needs: the most recently read texts, up to
    `TEXT_CACHE_CHARACTERS`, stay in one cache per process, which chunking and embedding (in document
    order) read through once. A file whose length changed since it was loaded is an error, not other text.
    """

    __slots__ = ("path", "_length", "_utf8_length")
    path: str

    def __init__(self, id: str, path: str, text: str) -> None:
        """`text` is the file's text as just read (`read_text`), for the lengths and the cache."""
        super().__init__(id, "")
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "_length", len(text))
        object.__setattr__(self, "_utf8_length", len(text.encode()))
        _TEXTS.put(path, text)

    @property
    def text(self) -> str:
        text = _TEXTS.get(self.path)
        if text is None:
            text = read_text(Path(self.path))
            if len(text) != self._length:
                raise DatasetError(f"{self.path} changed since the dataset was loaded ({self._length} characters "
                                   f"then, {len(text)} now); run again on the changed files")
            _TEXTS.put(self.path, text)
        return text

    @property
    def length(self) -> int:
        return self._length

    @property
    def utf8_length(self) -> int:
        return self._utf8_length


TEXT_CACHE_CHARACTERS = 32 * 2**20


class _RecentTexts:
    """The most recently read texts by path, at most `limit` characters in all (the newest always kept)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._characters = 0
        self._lock = threading.Lock()

    def get(self, path: str) -> str | None:
        with self._lock:
            text = self._texts.get(path)
            if text is not None:
                self._texts.move_to_end(path)
            return text

    def put(self, path: str, text: str) -> None:
        with self._lock:
            old = self._texts.pop(path, None)
            self._characters += len(text) - (len(old) if old is not None else 0)
            self._texts[path] = text
            while self._characters > self.limit and len(self._texts) > 1:
                self._characters -= len(self._texts.popitem(last=False)[1])


_TEXTS = _RecentTexts(TEXT_CACHE_CHARACTERS)


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


def listed_objects(record: dict[str, Any], name: str, where: str, holding: str, needed: str
                   ) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(position, where, object) for each object of the non-empty list field `name` of `record`; `holding` says what
    an object holds and `needed` why the list may not be empty, in the refusals."""
    values = field(record, name, where, list)
    if not values:
        raise DatasetError(f"{where}: field {name!r} is empty; {needed}")
    for position, value in enumerate(values):
        at = f"{where} {name}[{position}]"
        if not isinstance(value, dict):
            raise DatasetError(f"{at}: expected an object with {holding}")
        yield position, at, value


@dataclass(frozen=True)
class QuestionChoice:
    """Which of a dataset's questions a run asks: all, the first `limit`, or `sample` drawn with `seed`,
    stratified by corpus (each corpus keeps its share, at least one question). Every document stays. The
    dataset's fingerprint is of the questions kept, so a subset is its own dataset to the cache and to runs."""

    limit: int | None = None
    sample: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        for key in ("limit", "sample"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise DatasetError(f"dataset.{key} must be a positive integer or null, got {value!r}")
        if self.limit is not None and self.sample is not None:
            raise DatasetError("dataset.limit and dataset.sample both set; keep one (limit takes the first N "
                               "questions, sample draws N with dataset.seed)")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise DatasetError(f"dataset.seed must be an integer, got {self.seed!r}")

    def apply(self, dataset: Dataset) -> Dataset:
        wanted = self.limit if self.limit is not None else self.sample
        queries = dataset.queries
        if wanted is None or wanted >= len(queries):
            return dataset
        if self.limit is not None:
            kept = queries[:wanted]
        else:
            kept = [queries[i] for i in sorted(_stratified(queries, wanted, self.seed))]
        loading = {**dataset.loading, "questions_left_out": len(queries) - len(kept)}
        return Dataset(dataset.name, dataset.documents, kept, loading)


def _stratified(queries: list[Query], wanted: int, seed: int) -> list[int]:
    """Positions of `wanted` questions drawn without replacement, each corpus's share by largest remainder
    (at least one per corpus while `wanted` allows)."""
    groups: dict[str | None, list[int]] = {}
    for position, query in enumerate(queries):
        groups.setdefault(query.corpus, []).append(position)
    exact = {corpus: wanted * len(members) / len(queries) for corpus, members in groups.items()}
    shares = {corpus: min(len(groups[corpus]), max(1, int(share))) for corpus, share in exact.items()}
    for corpus in sorted(groups, key=lambda c: exact[c] - int(exact[c]), reverse=True):
        if sum(shares.values()) >= wanted:
            break
        if shares[corpus] < len(groups[corpus]):
            shares[corpus] += 1
    while sum(shares.values()) > wanted:  # the at-least-one rule overshot: trim the largest
        shares[max(shares, key=shares.get)] -= 1
    rng = np.random.default_rng(seed)
    return [int(i) for corpus, members in groups.items()
            for i in rng.choice(members, size=shares[corpus], replace=False)]


def build_dataset(name: str, documents: Iterable[tuple[str, Document]], queries: Iterable[tuple[str, Query]],
                  source: str, loading: dict[str, int] | None = None) -> Dataset:
    """Assemble a dataset from (where, item) pairs, rejecting duplicate ids and empty texts where they are
    (`where` is the file, or the file and line, that the item came from); `loading` counts what the
    loader changed or left out (`Dataset.loading`)."""
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
    return Dataset(name, by_id, query_list, dict(loading or {}))


_LOADED: dict[tuple, Dataset] = {}


def loaded(source: Any) -> Any:
    """A loader's dataset (`load_once`); anything else (a Dataset, documents, texts) as it is."""
    return load_once(source) if isinstance(source, DatasetLoader) else source


def load_once(loader: DatasetLoader) -> Dataset:
    """`loader.load()`, remembered for this process while the loader's files are unchanged.

    A sweep runs many jobs on one dataset in one process; reading and re-validating thousands of
    spans per job is wasted. The key holds the size and mtime of `path` (a file, or every file under a
    folder), so edited data is reloaded, and the loader's settings: its public attributes (a private one, such as
    where a cache lives, is not one).
    """
    settings = tuple(sorted((k, str(v)) for k, v in vars(loader).items() if not k.startswith("_")))

    def timed_load() -> Dataset:
        started = time.perf_counter()
        dataset = loader.load()
        _LOAD_SECONDS[dataset.fingerprint] = time.perf_counter() - started
        return dataset

    return remember(_LOADED, (type(loader).__qualname__, settings, _stamps(loader)), timed_load, limit=4)


def load_seconds(dataset: Dataset) -> float:
    """Seconds this process spent reading `dataset` from its files, told once: the first job to ask paid for
    it (directly or through the sweep's checks before it), later jobs read it from memory."""
    return _LOAD_SECONDS.pop(dataset.fingerprint, 0.0)


_LOAD_SECONDS: dict[str, float] = {}


def warn_if_few_questions(dataset: Dataset) -> None:
    """Say once per process that a dataset of fewer than `FEW_QUESTIONS` questions gives means and intervals
    that mean little (a run still scores it)."""
    if len(dataset.queries) < FEW_QUESTIONS and dataset.fingerprint not in _FEW_WARNED:
        _FEW_WARNED.add(dataset.fingerprint)
        log.warning("%s has %d question(s): a mean over so few, its 95%% interval and any comparison of "
                    "configurations mean little; use %d or more", dataset.name, len(dataset.queries), FEW_QUESTIONS)


FEW_QUESTIONS = 10
_FEW_WARNED: set[str] = set()


def _stamps(loader: DatasetLoader) -> tuple[tuple[str, int, int], ...]:
    """(file, size, mtime) for the loader's `path`: the file itself, or every file under the folder (one stat a
    file: a job asks for every one of them, 10,000 documents in a team's folder)."""
    if not getattr(loader, "path", None):
        return ()
    path = Path(str(loader.path)).expanduser()
    if path.is_dir():
        return tuple(sorted(_folder_stamps(str(path))))
    if path.is_file():
        status = path.stat()
        return ((str(path), status.st_size, status.st_mtime_ns),)
    return ()


def _folder_stamps(folder: str) -> Iterator[tuple[str, int, int]]:
    """(file, size, mtime) of every file under `folder`, its symlinked folders not entered (as `Path.rglob`)."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                yield from _folder_stamps(entry.path)
            elif entry.is_file():
                status = entry.stat()
                yield entry.path, status.st_size, status.st_mtime_ns
