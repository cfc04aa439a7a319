"""The vector-store stage's contract, and the ranking rule every store follows."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ragsweep.types import Hit


class VectorStore(Protocol):
    """Holds passage vectors and returns, per query vector, the k nearest as hits (best first)."""

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


def normalised(vectors: np.ndarray) -> np.ndarray:
    """Unit-length float32 rows (zero rows stay zero), so a dot product is cosine similarity."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def check_k(k: int) -> None:
    if k <= 0:
        raise ValueError(f"k must be > 0, got {k}")
