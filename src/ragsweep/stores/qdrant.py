"""Qdrant in local mode (in-process, no server), cosine similarity."""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from ragsweep.stores.base import KeptIndexes, check_k, index_key, normalised, ranked
from ragsweep.types import Hit

_UPSERT_BATCH = 1024
COLLECTION = "ragsweep"  # the one collection of a store's own in-memory client


class QdrantStore:
    """Qdrant's local mode searches exhaustively, so it ranks exactly like the numpy store.

    Vectors are normalised here and compared by dot product, which is cosine similarity: local
    mode's own cosine re-normalises every stored vector for each query (0.5-0.9 s per 472
    questions over 2,500 chunks here).

    A local-mode *path* can be opened by one process only, so each store is an in-memory client
    with one collection per index: parallel jobs never contend for a lock. Results are cached by
    the runner, so the index is rebuilt only when they are not, and the clients built stay in the
    process for the next store given the same vectors (`KeptIndexes`).

    Args:
        query_batch: Query vectors sent per batch request.
    """

    preload = ("qdrant_client",)  # libraries its work imports (runner.workers)

    def __init__(self, query_batch: int = 64) -> None:
        if query_batch <= 0:
            raise ValueError(f"store.query_batch must be > 0, got {query_batch}")
        self.query_batch = query_batch
        self._client = None
        self._size = 0

    def add(self, vectors: np.ndarray) -> None:
        from qdrant_client import QdrantClient, models

        vectors = normalised(vectors)
        key = None
        if self._client is None:
            key = index_key(vectors)
            kept = _KEPT.take(key)
            if kept is not None:
                self._client, self._size = kept, len(vectors)
                return
            _KEPT.make_room(vectors.nbytes)
            self._client = QdrantClient(location=":memory:")
            self._client.create_collection(
                COLLECTION, vectors_config=models.VectorParams(size=vectors.shape[1], distance=models.Distance.DOT)
            )
        else:
            _KEPT.release(self._client)
        starts = range(0, len(vectors), _UPSERT_BATCH)
        for first in tqdm(starts, desc="qdrant index", unit="batch", disable=len(starts) < 4):
            batch = vectors[first : first + _UPSERT_BATCH]
            self._client.upsert(COLLECTION, points=models.Batch(
                ids=list(range(self._size + first, self._size + first + len(batch))), vectors=batch.tolist()))
        self._size += len(vectors)
        if key is not None:
            _KEPT.keep(key, self._client, vectors.nbytes)

    def close(self) -> None:
        if self._client is not None and not _KEPT.give_back(self._client):
            self._client.close()
        self._client, self._size = None, 0

    def search(self, queries: np.ndarray, k: int) -> list[list[Hit]]:
        from qdrant_client import models

        check_k(k)
        queries = normalised(queries)
        results: list[list[Hit]] = []
        starts = range(0, len(queries), self.query_batch)
        for first in tqdm(starts, desc="qdrant search", unit="batch", disable=len(starts) < 4 or self._size < 100_000):
            requests = [models.QueryRequest(query=q.tolist(), limit=k) for q in queries[first : first + self.query_batch]]
            for response in self._client.query_batch_points(COLLECTION, requests=requests):
                results.append(ranked([p.id for p in response.points], [p.score for p in response.points]))
        return results


_KEPT = KeptIndexes(lambda client: client.close())
