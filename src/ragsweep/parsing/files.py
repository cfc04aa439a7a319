"""A folder's files parsed once: each file's text is cached by (its content, its parser's identity). Processes that
parse the same folder at once (a parallel sweep's jobs, nodes sharing the cache) share its files out among
themselves, each parsing the files no other is parsing (`StageCache.get_or_compute_each`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragsweep.cache import Arrays, StageCache, fingerprint
from ragsweep.parsing.base import Parsed, Parser, UnreadableFile
from ragsweep.parsing.by_type import ByFileType

log = logging.getLogger(__name__)

STAGE = "parsed"


def parse_files(parser: ByFileType, paths: Sequence[Path], cache: StageCache) -> list[Parsed | UnreadableFile]:
    """Each file's parse, in `paths` order, or the UnreadableFile saying why its parser could not read it (not
    cached: a fixed file is read again). A file's key holds the sha256 of its bytes, so a renamed copy is not
    parsed again and an edited file is."""
    readers = [_reader(parser, path) for path in paths]
    keys = [fingerprint(STAGE, _sha256(path), _identity(reader)) for path, reader in zip(paths, readers, strict=True)]

    def compute(positions: list[int]) -> list[Arrays]:
        return [_parse(readers[i], paths[i]) for i in positions]

    entries = cache.get_or_compute_each(STAGE, keys, compute, batch=1, storable=lambda arrays: "error" not in arrays)
    return [_parsed(entry) for entry in entries]


def _reader(parser: ByFileType, path: Path) -> Parser:
    reader = parser.parser_of(path)
    if reader is None:
        raise ValueError(f"{path}: no parser reads {path.suffix or 'files without a suffix'}")
    return reader


def _identity(reader: Parser) -> dict[str, Any]:
    """What a file's text depends on besides its bytes: the parser's class, settings, code version and library."""
    return {"class": f"{type(reader).__module__}.{type(reader).__qualname__}", "settings": vars(reader),
            "version": getattr(reader, "version", None), "library": reader.library}


def _parse(reader: Parser, path: Path) -> Arrays:
    """A file's parse as cache arrays; any error the library raises on it becomes the entry's `error`."""
    try:
        parsed = reader.parse(path)
    except UnreadableFile as error:
        return {"error": np.array(str(error))}
    except Exception as error:  # noqa: BLE001 - a library's own error on a broken file, said in one line
        return {"error": np.array(f"{reader.library} cannot read it ({type(error).__name__}: {error})")}
    return {"text": np.frombuffer(parsed.text.encode(), dtype=np.uint8), "pages": np.array(parsed.pages, np.int64),
            "blank_pages": np.array(parsed.blank_pages, np.int64)}


def _parsed(arrays: Arrays) -> Parsed | UnreadableFile:
    if "error" in arrays:
        return UnreadableFile(str(arrays["error"]))
    return Parsed(arrays["text"].tobytes().decode(), tuple(arrays["pages"].tolist()),
                  tuple(arrays["blank_pages"].tolist()))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
