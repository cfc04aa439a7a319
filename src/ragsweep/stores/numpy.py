"""Exact cosine search in memory: the reference every approximate store is measured against."""

from __future__ import annotations

import numpy as np

from ragsweep.stores.base import check_k, normalised, top_k
from ragsweep.types import Hit

SCORES_BUDGET = 16 * 2**20  # floats of one batch's scores


class NumpyStore:
    """Brute-force top-k by cosine similarity (batched matrix product + argpartition).

    Args:
        batch_size: Query vectors scored per matrix product at most; fewer when the chunks are many, so one
            product's scores stay within `SCORES_BUDGET` floats (64 MB) at any corpus size.
    """

    def __init__(self, batch_size: int = 256) -> None:
        if batch_size <= 0:
            raise ValueError(f"store.batch_size must be > 0, got {batch_size}")
        self.batch_size = batch_size
        self._vectors = np.empty((0, 0), dtype=np.float32)

    def add(self, vectors: np.ndarray) -> None:
        vectors = normalised(vectors, in_place=True)
        self._vectors = vectors if self._vectors.size == 0 else np.vstack((self._vectors, vectors))

    def close(self) -> None:
        """Drop the vectors, as Chroma and Qdrant drop their collections: a job that indexes again (a race's
        round computing two shards) starts from an empty index, not from the chunks twice over."""
        self._vectors = np.empty((0, 0), dtype=np.float32)

    def queries_per_product(self) -> int:
        return max(1, min(self.batch_size, SCORES_BUDGET // max(1, len(self._vectors))))

    def search(self, queries: np.ndarray, k: int) -> list[list[Hit]]:
        check_k(k)
        queries = normalised(queries)
        results: list[list[Hit]] = []
        batch = self.queries_per_product()
        for first in range(0, len(queries), batch):
            scores = queries[first : first + batch] @ self._vectors.T
            results += [top_k(row, k) for row in scores]
            del scores  # freed before the next product, not after it
        return results
