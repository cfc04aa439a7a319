"""The vector-store stage's contract, and the ranking rule every store follows."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from typing import Any, Protocol

import numpy as np

from ragsweep.contract import PRELOAD, VERSION, OptionalAttribute
from ragsweep.types import Hit


class VectorStore(Protocol):
    """Holds passage vectors and returns, per query vector, the k nearest as hits (best first).

    `add` takes the array: a store may keep it and normalise it in place, so a million vectors are not held
    twice; a caller that needs its vectors afterwards passes a copy.
    """

    def add(self, vectors: np.ndarray) -> None: ...

    def search(self, queries: np.ndarray, k: int) -> list[list[Hit]]: ...


# What a dense retriever and the engine read on a store beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {
    "close": OptionalAttribute("method", "close(): release its index (or give it back to `KeptIndexes`); the dense "
                                         "retriever's `close` calls it"),
    "search_breadth": OptionalAttribute("method", "search_breadth(k) -> int | None: the candidate list an approximate "
                                                  "search takes its top k from, which the dense retriever gives as "
                                                  "its own (`retrieval.base.OPTIONAL`); None (or no method): exact"),
    "preload": PRELOAD,
    "version": VERSION,
}


def ranked(indices, scores) -> list[Hit]:
    """Hits by score, best first; equal scores go to the earlier-added vector, in every store."""
    pairs = sorted(zip((int(i) for i in indices), (float(s) for s in scores)), key=lambda p: (-p[1], p[0]))
    return [Hit(index, score) for index, score in pairs]


def top_k(scores: np.ndarray, k: int) -> list[Hit]:
    """The k best of a score per item, as ranked hits; everything tied with the k-th score competes,
    so which tied items make the cut follows `ranked`'s rule, not the partition's order."""
    k = min(k, len(scores))
    if k == 0:
        return []
    cut = -np.partition(-scores, k - 1)[k - 1]
    keep = np.flatnonzero(scores >= cut)
    return ranked(keep, scores[keep])[:k]


def normalised(vectors: np.ndarray, in_place: bool = False) -> np.ndarray:
    """Unit-length float32 rows (zero rows stay zero), so a dot product is cosine similarity; `in_place`
    divides float32 `vectors` themselves (the same numbers, without a second array)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.empty((len(vectors), 1), dtype=np.float32)
    for start in range(0, len(vectors), NORM_ROWS):  # norm squares its input: a block at a time, not a second array
        norms[start : start + NORM_ROWS] = np.linalg.norm(vectors[start : start + NORM_ROWS], axis=1, keepdims=True)
    norms[norms == 0] = 1
    if in_place and vectors.flags.writeable:
        return np.divide(vectors, norms, out=vectors)
    return vectors / norms


NORM_ROWS = 65_536


def check_k(k: int) -> None:
    if k <= 0:
        raise ValueError(f"k must be > 0, got {k}")


def index_key(vectors: np.ndarray, *settings: Hashable) -> tuple:
    """What a built index depends on: the build settings and the vectors' bytes (a digest, not a copy)."""
    vectors = np.ascontiguousarray(vectors)
    return (*settings, vectors.shape, str(vectors.dtype), hashlib.blake2b(vectors.data, digest_size=16).hexdigest())


KEPT_BYTES = 2**30  # vector bytes of the indexes a store kind keeps in a process (float32: 700 k x 384)


class KeptIndexes:
    """The indexes a store kind built in this process, kept when their stores close, so a later store given the
    very same vectors and build settings (a race's next round: the same chunks, new questions) searches one
    instead of building it again. Each is lent to one store at a time; the least recently used are freed while
    the kept vectors exceed `budget` bytes (the newest is kept whatever its size).

    Args:
        free: Frees a built index (deletes its collection, closes its client).
        budget: Bytes of vectors kept at most, beyond the newest index.
    """

    def __init__(self, free: Callable[[Any], None], budget: int = KEPT_BYTES) -> None:
        self._free = free
        self._budget = budget
        self._kept: dict[tuple, list] = {}  # key -> [index, bytes, lent], least recently used first

    def take(self, key: tuple) -> Any:
        """The kept index built from `key`, lent to the caller until it gives it back; None when there is none
        or another store has it."""
        entry = self._kept.get(key)
        if entry is None or entry[2]:
            return None
        entry[2] = True
        self._kept[key] = self._kept.pop(key)  # most recently used last
        return entry[0]

    def make_room(self, size: int) -> None:
        """Before building an index of `size` bytes of vectors: free kept ones not lent out, least recently used
        first, until it fits in the budget beside them."""
        for key in list(self._kept):
            if sum(entry[1] for entry in self._kept.values()) + size <= self._budget:
                return
            if not self._kept[key][2]:
                self._free(self._kept.pop(key)[0])

    def keep(self, key: tuple, index: Any, size: int) -> None:
        """Keep a whole index of `size` bytes of vectors just built from `key`, lent to its builder."""
        self._kept[key] = [index, size, True]

    def give_back(self, index: Any) -> bool:
        """The store holding `index` is closed: True when it is kept (the store must not free it)."""
        for entry in self._kept.values():
            if entry[0] is index:
                entry[2] = False
                return True
        return False

    def release(self, index: Any) -> None:
        """Stop keeping `index` without freeing it: its store adds more vectors to it, and owns it now."""
        for key, entry in list(self._kept.items()):
            if entry[0] is index:
                del self._kept[key]
