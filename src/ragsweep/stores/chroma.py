"""Chroma (local, in-process) with an HNSW index in cosine space."""

from __future__ import annotations

import uuid

import numpy as np
from tqdm.auto import tqdm

from ragsweep.stores.base import KeptIndexes, check_k, index_key, ranked
from ragsweep.types import Hit

_ADD_BATCH = 4096  # below Chroma's maximum batch size


class ChromaStore:
    """Approximate top-k. Embeddings are always passed in (Chroma's default embedding function
    would download a model) and telemetry is off. Each store is its own in-memory collection, so
    parallel jobs never share a database file; results are cached by the runner instead, and the
    collections built stay in the process for the next store given the same vectors (`KeptIndexes`).

    Args:
        ef_construction: HNSW build-time candidate list (Chroma default 100).
        ef_search: HNSW query-time candidate list; raised to k when smaller (Chroma default 100).
        max_neighbors: HNSW links per node, "M" (Chroma default 16).
    """

    preload = ("chromadb",)  # libraries its work imports (runner.workers)

    def __init__(self, ef_construction: int = 200, ef_search: int = 200, max_neighbors: int = 32) -> None:
        for key, value in {"ef_construction": ef_construction, "ef_search": ef_search, "max_neighbors": max_neighbors}.items():
            if value <= 0:
                raise ValueError(f"store.{key} must be > 0, got {value}")
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        self.max_neighbors = max_neighbors
        self._collection = None
        self._size = 0
        self._ef: int | None = None  # the collection's ef_search now (a kept collection's: unknown)

    def add(self, vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors, dtype=np.float32)
        key = None
        if self._collection is None:
            key = index_key(vectors, self.ef_construction, self.max_neighbors)
            kept = _KEPT.take(key)
            if kept is not None:
                self._collection, self._size, self._ef = kept, len(vectors), None
                return
            _KEPT.make_room(vectors.nbytes)
            self._collection = _client().create_collection(
                f"ragsweep-{uuid.uuid4().hex}",
                configuration={"hnsw": {"space": "cosine", "ef_construction": self.ef_construction,
                                        "ef_search": self.ef_search, "max_neighbors": self.max_neighbors,
                                        "num_threads": 1}},
                embedding_function=None,
            )
            self._ef = self.ef_search
        else:
            _KEPT.release(self._collection)
        starts = range(0, len(vectors), _ADD_BATCH)
        for first in tqdm(starts, desc="chroma index", unit="batch", disable=len(starts) < 4):
            batch = vectors[first : first + _ADD_BATCH]
            ids = [str(self._size + first + i) for i in range(len(batch))]
            self._collection.add(ids=ids, embeddings=batch)
        self._size += len(vectors)
        if key is not None:
            _KEPT.keep(key, self._collection, vectors.nbytes)

    def close(self) -> None:
        """Let go of the collection: deleted unless this process keeps it (Chroma's in-process client lives as
        long as the process)."""
        if self._collection is not None and not _KEPT.give_back(self._collection):
            _drop(self._collection)
        self._collection, self._size, self._ef = None, 0, None

    def search_breadth(self, k: int) -> int:
        """HNSW keeps max(ef_search, k) candidates and returns their best k: a top k is the first k of a
        deeper search only when both weighed the same candidates."""
        return max(self.ef_search, k)

    def search(self, queries: np.ndarray, k: int) -> list[list[Hit]]:
        check_k(k)
        k = min(k, self._size)
        if max(k, self.ef_search) != self._ef:
            self._ef = max(k, self.ef_search)
            self._collection.modify(configuration={"hnsw": {"ef_search": self._ef}})
        result = self._collection.query(query_embeddings=np.asarray(queries, dtype=np.float32), n_results=k,
                                        include=["distances"])
        # cosine distance = 1 - cosine similarity
        return [ranked(ids, 1.0 - np.asarray(distances)) for ids, distances in zip(result["ids"], result["distances"])]


def _client():
    import chromadb
    from chromadb.config import Settings

    return chromadb.EphemeralClient(Settings(anonymized_telemetry=False))


def _drop(collection) -> None:
    _client().delete_collection(collection.name)


_KEPT = KeptIndexes(_drop)
