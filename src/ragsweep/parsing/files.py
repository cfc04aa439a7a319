"""A folder's files parsed once: each file's text is cached by (its content, its parser's identity). Processes that
parse the same folder at once (helpers on this machine's free cores, a parallel sweep's jobs, nodes sharing the
cache) share its files out among themselves, each parsing the files no other is parsing
(`StageCache.get_or_compute_each`).
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from ragsweep.cache import Arrays, StageCache
from ragsweep.identity import fingerprint
from ragsweep.cores import model_threads
from ragsweep.parsing.base import Parsed, Parser, UnreadableFile
from ragsweep.parsing.by_type import ByFileType

log = logging.getLogger(__name__)

STAGE = "parsed"
PROGRESS_FROM = 8  # files to parse from which a progress bar is shown (a few files take seconds)


def parse_files(parser: ByFileType, paths: Sequence[Path], cache: StageCache, helpers: bool = True
                ) -> list[Parsed | UnreadableFile]:
    """Each file's parse, in `paths` order, or the UnreadableFile saying why its parser could not read it (not
    cached: a fixed file is read again). A file's key holds the sha256 of its bytes, so a renamed copy is not
    parsed again and an edited file is. With `helpers`, files not yet cached are shared with helper processes on
    the cores this process may use (`_helping`), which parse into the cache beside it."""
    readers = [_reader(parser, path) for path in paths]
    keys = [fingerprint(STAGE, _sha256(path), _identity(reader)) for path, reader in zip(paths, readers, strict=True)]
    missing = [path for path, key in zip(paths, keys, strict=True) if not cache.holds(STAGE, key)]

    def compute(positions: list[int]) -> list[Arrays]:
        return [_parse(readers[i], paths[i]) for i in positions]

    with _helping(parser, missing, cache) if helpers else nullcontext():
        entries = cache.get_or_compute_each(STAGE, keys, compute, batch=1,
                                            progress=helpers and len(missing) >= PROGRESS_FROM,
                                            storable=lambda arrays: "error" not in arrays)
    return [_parsed(entry) for entry in entries]


@contextmanager
def _helping(parser: ByFileType, missing: Sequence[Path], cache: StageCache) -> Iterator[None]:
    """While this process parses `missing`, as many helper processes as its share of the cores allows beside it
    (`python -m ragsweep.parsing.files`), each taking the files nobody else is parsing (a lock per file), storing
    them in the cache, which this process reads. PDF parsers hold Python's lock or PDFium's, so threads would not
    help; processes started afresh keep the caller's `__main__` out of it (multiprocessing's spawn imports it).
    None without a cache to share through, or with one core."""
    if not cache.enabled or STAGE in cache.fresh or len(missing) < 2:
        yield
        return
    with model_threads(None) as cores, tempfile.TemporaryDirectory(prefix="ragsweep-parse-") as folder:
        count = min(cores, len(missing)) - 1
        if count < 1:
            yield
            return
        work = Path(folder) / "work.pickle"
        work.write_bytes(pickle.dumps((parser, list(missing), str(cache.root), cache.locks)))
        started = [subprocess.Popen([sys.executable, "-m", "ragsweep.parsing.files", str(work)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(count)]
        log.info("parsing %d files on %d processes", len(missing), count + 1)
        try:
            yield
        except BaseException:  # Ctrl-C or a failure: the helpers' work is not wanted now
            _stop(started, grace=0)
            raise
        _stop(started, grace=HELPER_GRACE)


def _stop(helpers: list[subprocess.Popen], grace: float) -> None:
    """Each helper once it has ended, or after `grace` seconds, killed (a file it was parsing stays unparsed, and
    unlocked: the next parse of it takes it)."""
    for helper in helpers:
        try:
            helper.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            helper.kill()
            helper.wait()


HELPER_GRACE = 60  # seconds a helper may take to finish its file once every file is parsed, before it is stopped


def _help(work: Path) -> None:
    """A helper's work (`_helping`): parse the files nobody else is parsing into the cache."""
    parser, paths, root, locks = pickle.loads(work.read_bytes())
    parse_files(parser, [Path(path) for path in paths], StageCache(root, locks=locks), helpers=False)


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
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


if __name__ == "__main__":
    _help(Path(sys.argv[1]))
