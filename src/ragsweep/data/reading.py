"""Reading a loader's files: folders and files required, UTF-8 text, JSON Lines records and their fields.

Every refusal is a `DatasetError` naming the path (and line, record and field), so a user can fix their data
without reading our code. A `FileDocument` keeps its path, not its text, so a large corpus is read again
when needed rather than held in memory.
"""

from __future__ import annotations

import difflib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ragsweep.data.base import DatasetError
from ragsweep.types import Document


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


def known_fields(record: dict[str, Any], read: tuple[str, ...], where: str, meant: Mapping[str, str] | None = None,
                 kept: tuple[str, ...] = (), own: str | None = None) -> None:
    """Refuse a field the format neither reads (`read`) nor keeps (`kept`), naming the one most likely meant
    (`meant`: other names for a field, by their lower case; else the closest spelling): a field ignored is a check
    never made, as a `text` meant as `content` leaves its span unchecked. `own`: where a user's own fields go."""
    for name in record:
        if name in read or name in kept:
            continue
        close = (meant or {}).get(name.casefold()) or next(iter(difflib.get_close_matches(name, read, 1, 0.6)), None)
        hint = f"did you mean {close!r}? " if close else ""
        keep = f"; keep your own fields under {own!r}" if own else ""
        raise DatasetError(f"{where}: unknown field {name!r}; {hint}the fields read are {', '.join(read)}{keep}")


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
