"""A loader's dataset as the engine asks for it: loaded once per process while its files are unchanged, the
seconds that took told once, and a dataset of few questions said once to give numbers that mean little, one that
asks a question twice said once to count it twice.
"""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragsweep.data.base import DatasetLoader
from ragsweep.memo import remember
from ragsweep.types import Dataset

log = logging.getLogger(__name__)


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


def warn_if_questions_repeat(dataset: Dataset) -> None:
    """Say once per process which questions ask the same (their text alike once case and spacing are folded), by
    their ids: each counts in every mean, so a question asked twice weighs twice (a run still scores it)."""
    if dataset.fingerprint in _REPEATS_WARNED:
        return
    _REPEATS_WARNED.add(dataset.fingerprint)
    asked: dict[str, list[str]] = defaultdict(list)
    for query in dataset.queries:
        asked[" ".join(query.text.split()).casefold()].append(query.id)
    repeated = [ids for ids in asked.values() if len(ids) > 1]
    if repeated:
        named = "; ".join(", ".join(ids) for ids in repeated[:SHOWN]) + (
            f"; and {len(repeated) - SHOWN} more" if len(repeated) > SHOWN else "")
        log.warning("%s: %d question(s) asked more than once, by ids %s: a repeated question weighs more than once in "
                    "every mean; keep one of each (or word them apart)", dataset.name, len(repeated), named)


SHOWN = 5  # groups of repeated questions a warning names before it says how many more
_REPEATS_WARNED: set[str] = set()


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
