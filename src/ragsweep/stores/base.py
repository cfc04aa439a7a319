"""The vector-store stage's contract, and the ranking rule every store follows."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ragsweep.types import Hit


class VectorStore(Protocol):
    """Holds passage vectors and returns, per query vector, the k nearest as hits (best first).

    `add` takes the array: a store may keep it and normalise it in place, so a million vectors are not held
    twice; a caller that needs its vectors afterwards passes a copy.
    """

    def add(self, vectors: np.ndarray) -> None: ...

    def search(self, queries: np.ndarray, k: int) -> list[list[Hit]]: ...


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
