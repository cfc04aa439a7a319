"""Dense and BM25 rankings fused by reciprocal rank (Cormack et al. 2009)."""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.cache import StageCache
from ragsweep.embedding.base import Embedder
from ragsweep.retrieval.base import Retriever, reciprocal_rank
from ragsweep.retrieval.bm25 import BM25Retriever
from ragsweep.retrieval.dense import DenseRetriever
from ragsweep.stores.base import VectorStore, check_k
from ragsweep.types import Chunk, Hit


class HybridRetriever:
    """score(chunk) = dense_weight / (rrf_k + dense rank) + bm25_weight / (rrf_k + bm25 rank), ranks from 1.

    Each side contributes its top `k` (the runner asks for the first-stage depth, 100 by default),
    so the fused ranking depends on that depth: the runner caches each side's list, not the fusion.

    Args:
        rrf_k: RRF damping constant (> 0; 60 in the original paper).
        dense_weight: Weight of the dense ranking (>= 0).
        bm25_weight: Weight of the BM25 ranking (>= 0).
        k1: BM25 k1.
        b: BM25 b.
        embedder, store, cache: Passed in by the runner.
    """

    def __init__(self, embedder: Embedder, store: VectorStore, rrf_k: float = 60, dense_weight: float = 1.0,
                 bm25_weight: float = 1.0, k1: float = 1.5, b: float = 0.75, cache: StageCache | None = None) -> None:
        if rrf_k <= 0:
            raise ValueError(f"retriever.rrf_k must be > 0, got {rrf_k}")
        if dense_weight < 0 or bm25_weight < 0 or dense_weight + bm25_weight == 0:
            raise ValueError(f"retriever weights must be >= 0 and not both 0, got {dense_weight=}, {bm25_weight=}")
        self.rrf_k, self.weights = rrf_k, (dense_weight, bm25_weight)
        self.dense = DenseRetriever(embedder, store)
        self.bm25 = BM25Retriever(k1=k1, b=b, cache=cache)

    def index(self, chunks: Sequence[Chunk]) -> None:
        self.dense.index(chunks)
        self.bm25.index(chunks)

    def close(self) -> None:
        self.dense.close()
        self.bm25.close()

    def ranked_lists(self) -> dict[str, Retriever]:
        """The rankings fused; the runner caches each one's list and calls `fuse` at the requested depth."""
        return {"dense": self.dense, "bm25": self.bm25}

    def fuse(self, lists: dict[str, Sequence[Sequence[Hit]]], k: int) -> list[list[Hit]]:
        """Each question's top k by fused score, from each list's top k."""
        check_k(k)
        return [reciprocal_rank(pair, k, self.rrf_k, self.weights)
                for pair in zip(lists["dense"], lists["bm25"], strict=True)]

    def search(self, questions: Sequence[str], k: int) -> list[list[Hit]]:
        return self.fuse({name: side.search(questions, k) for name, side in self.ranked_lists().items()}, k)
