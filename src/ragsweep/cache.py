"""A content-addressed, on-disk cache for the expensive stages, safe to share between processes.

An entry's key is the sha256 of its stage's inputs, the producing component's config and the
version of the key scheme (`identity.fingerprint`), so a changed input or setting can never be served stale results. Entries are
numpy archives written to a temporary file and renamed into place (atomic on POSIX), so a
parallel job never reads half an entry. Each archive carries a sha256 of its own arrays; an
entry that fails to load or to verify is logged, deleted and rebuilt.

Correctness needs no locks: two processes (or nodes of a cluster) computing the same entry write
the same content under the same name, and the last rename wins. File locks only save the second
computation where the filesystem honours them; `locks=False` (or a filesystem that refuses them)
drops them, and a network filesystem whose locks are unreliable costs time, never results.

Embeddings are cached per text, not per run, in a folder of shards per embedder
(`ragsweep.embedding.cached`).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import logging
import os
import uuid
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ragsweep.disk import naming

log = logging.getLogger(__name__)

Arrays = dict[str, np.ndarray]
EMBEDDING_SHARD = 8192  # texts a shard: a few seconds of a static model, minutes of a transformer on 2 cores


class StageCache:
    """Stage results under `root/<stage>/<key[:2]>/<key>.npz`; counts hits and misses per stage.

    Args:
        root: Folder of the cache (created on first write).
        enabled: False computes everything and stores nothing (`cache=off`).
        locks: False never takes a file lock: parallel jobs may compute an entry twice (same
            content, written atomically) instead of waiting for each other.
        fresh: Stages computed again, neither read nor stored (`+cache.fresh=[retrieval,rerank,answers]`):
            a stage's entry keeps the milliseconds measured when it was computed, so `gate` times a
            configuration afresh this way.
        embedding_shard: Texts embedded under one lock and stored as one file: the jobs that need the same
            embedding (on any node sharing the cache) share its shards out among themselves.
    """

    def __init__(self, root: str | Path, enabled: bool = True, locks: bool = True, fresh: Sequence[str] = (),
                 embedding_shard: int = EMBEDDING_SHARD) -> None:
        if not isinstance(embedding_shard, int) or isinstance(embedding_shard, bool) or embedding_shard <= 0:
            raise ValueError(f"cache.embedding_shard must be a positive number of texts, got {embedding_shard!r}")
        self.root = Path(root)
        self.enabled = enabled
        self.locks = locks
        self.fresh = frozenset(fresh)
        self.embedding_shard = embedding_shard
        self.hits: Counter[str] = Counter()
        self.misses: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()  # time spent in work that runs inside other stages (embedding)
        self.bypassing = False

    @classmethod
    def from_settings(cls, settings: Any) -> StageCache:
        """The cache a `conf/cache/` group describes (`dir`, `enabled`, optional `locks`)."""
        return cls(settings["dir"], enabled=bool(settings["enabled"]), locks=bool(settings.get("locks", True)),
                   fresh=tuple(settings.get("fresh") or ()),
                   embedding_shard=settings.get("embedding_shard", EMBEDDING_SHARD))

    @contextmanager
    def embeddings_bypassed(self) -> Iterator[None]:
        """Inside this block cached embedders embed questions with their models, for timing what a new
        question costs; passages still come from the cache, as an index holds them before any question."""
        self.bypassing = True
        try:
            yield
        finally:
            self.bypassing = False

    def get_or_compute(self, stage: str, key: str, compute: Callable[[], Arrays],
                       usable: Callable[[Arrays], bool] = lambda arrays: True) -> Arrays:
        """The stored entry when present and `usable`, else `compute()` stored under the key."""
        if not self.enabled or stage in self.fresh:
            self.misses[stage] += 1
            return compute()
        stored = self._usable(stage, key, usable)
        if stored is None:
            # parallel jobs that need the same entry: one computes it while the others wait, then read it
            with self.lock(f"{stage}-{key}"):
                stored = self._usable(stage, key, usable)
                if stored is None:
                    self.misses[stage] += 1
                    arrays = compute()
                    self.save(stage, key, arrays)
                    return arrays
        self.hits[stage] += 1
        return stored

    def get_or_compute_each(self, stage: str, keys: Sequence[str], compute: Callable[[list[int]], list[Arrays]],
                            batch: int = 8, storable: Callable[[Arrays], bool] = lambda arrays: True,
                            progress: bool = True) -> list[Arrays]:
        """One entry per key (position i answers keys[i]): stored ones read, the others computed by
        `compute(positions)` `batch` at a time and stored as each batch finishes, so a killed job keeps
        what it finished. Results that are not `storable` (a failed call) are returned, never stored.

        Parallel jobs share entries without waiting on each other: each computes the keys nobody else
        is computing (a lock per key, taken without blocking), and only then waits for the rest and
        reads them, or computes them if their holder died without storing them.
        """
        enabled = self.enabled and stage not in self.fresh
        results: dict[int, Arrays] = {}
        first_of: dict[str, int] = {}
        for position, key in enumerate(keys):  # identical keys (two questions, same prompt) count once
            first_of.setdefault(key, position)
        pending = []
        for key, position in first_of.items():
            stored = self.load(stage, key) if enabled else None
            if stored is None:
                pending.append(position)
            else:
                self.hits[stage] += 1
                results[position] = stored
        bar = tqdm(total=len(pending), desc=stage, unit="item", disable=not progress or len(pending) < 2)
        blocking = False
        while pending:
            deferred = []
            for start in range(0, len(pending), batch):
                with ExitStack() as locks:
                    mine = []
                    for position in pending[start : start + batch]:
                        key = keys[position]
                        if enabled and not locks.enter_context(self.lock(f"{stage}-{key}", blocking)):
                            deferred.append(position)
                            continue
                        stored = self.load(stage, key) if enabled else None
                        if stored is None:
                            mine.append(position)
                        else:
                            self.hits[stage] += 1
                            results[position] = stored
                            bar.update()
                    if not mine:
                        continue
                    for position, arrays in zip(mine, compute(mine), strict=True):
                        self.misses[stage] += 1
                        results[position] = arrays
                        if enabled and storable(arrays):
                            self.save(stage, keys[position], arrays)
                    bar.update(len(mine))
            pending, blocking = deferred, True
        bar.close()
        return [results[first_of[key]] for key in keys]

    @contextmanager
    def lock(self, name: str, blocking: bool = True, folder: Path | None = None) -> Iterator[bool]:
        """`exclusive` on `<folder or root/.locks>/<name>.lock`; yields True at once when locks are off."""
        if not self.locks:
            yield True
            return
        with exclusive((folder or self.root / ".locks") / f"{name}.lock", blocking) as held:
            yield held

    def _usable(self, stage: str, key: str, usable: Callable[[Arrays], bool]) -> Arrays | None:
        stored = self.load(stage, key)
        return stored if stored is not None and usable(stored) else None

    def load(self, stage: str, key: str) -> Arrays | None:
        return read_entry(self._path(stage, key))

    def peek(self, stage: str, key: str) -> Arrays | None:
        """The entry stored under the key, or None, neither computed nor counted (what an estimate reads)."""
        return self.load(stage, key) if self.enabled and stage not in self.fresh else None

    def holds(self, stage: str, key: str) -> bool:
        """Whether an entry is stored under the key (unchecked: reading it may still find it corrupt)."""
        return self.enabled and stage not in self.fresh and self._path(stage, key).exists()

    def save(self, stage: str, key: str, arrays: Arrays) -> None:
        write_entry(self._path(stage, key), arrays)

    def reset_counts(self) -> None:
        """Count hits and misses from zero: a race's kept configuration counts each round's own."""
        self.hits.clear()
        self.misses.clear()

    def counts(self) -> dict[str, float]:
        stages = sorted(set(self.hits) | set(self.misses))
        return {
            **{f"cache_hits_{stage}": float(self.hits[stage]) for stage in stages},
            **{f"cache_misses_{stage}": float(self.misses[stage]) for stage in stages},
        }

    def _path(self, stage: str, key: str) -> Path:
        return self.root / stage / key[:2] / f"{key}.npz"


@contextmanager
def exclusive(path: Path, blocking: bool = True) -> Iterator[bool]:
    """An advisory lock across processes; the kernel drops it if its holder dies, even by kill -9.
    Yields True once held; without `blocking`, yields False at once if another process holds it.
    A filesystem that refuses locks (some network mounts) gives no lock and a warning, not an error:
    the cache is correct without them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        except OSError as error:  # ENOLCK, EOPNOTSUPP: no lock service on this mount
            _warn_no_locks(str(path.parent), str(error))
            yield True
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@functools.cache
def _warn_no_locks(folder: str, reason: str) -> None:
    """Once per folder: a filesystem without locks is worth one line, not one per entry."""
    log.warning("no file locks under %s (%s): going on without them; parallel jobs may compute an entry twice "
                "(cache.locks=false silences this)", folder, reason)


def write_entry(path: Path, arrays: Arrays) -> None:
    """Write arrays plus their checksum to a temp file, then rename it over `path`; a write that fails (a full
    disk) leaves no temp file and names the cache's folder, which a failed flush does not."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        with open(partial, "wb") as handle:
            np.savez(handle, **arrays, _sha256=np.array(_checksum(arrays)))
        os.replace(partial, path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise naming(error, path.parent) from error


def read_entry(path: Path) -> Arrays | None:
    """The entry's arrays, or None when it is missing, unreadable or fails its checksum (then deleted)."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        expected = str(arrays.pop("_sha256"))
        if _checksum(arrays) != expected:
            raise ValueError("checksum mismatch")
        return arrays
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        log.warning("cache entry %s is corrupt (%s); rebuilding it", path, error)
        path.unlink(missing_ok=True)
        return None


def _checksum(arrays: Arrays) -> str:
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()
