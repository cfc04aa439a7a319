"""Nearest chunks by embedding similarity."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragsweep.embedding.base import Embedder
from ragsweep.stores.base import VectorStore
from ragsweep.types import Chunk, ChunkTexts, Hit


class DenseRetriever:
    """Embeds chunks into the store, then embeds all questions in one batch and searches.

    Args:
        embedder: Built from the `embedder` group by the runner.
        store: Built from the `store` group by the runner.
    """

    def __init__(self, embedder: Embedder, store: VectorStore) -> None:
        self.embedder = embedder
        self.store = store
        self._prepared: tuple[Sequence[Chunk], np.ndarray] | None = None

    def prepare(self, chunks: Sequence[Chunk]) -> None:
        """Embed the chunks into the embedder's cache (shared out with other jobs that embed them), keeping the
        vectors for `index` of the same chunk list, so it neither hashes nor stacks them a second time."""
        self._prepared = (chunks, self.embedder.encode(ChunkTexts(chunks), role="passage"))

    def embed_passages(self, chunks: Sequence[Chunk]) -> int:
        """Embed the chunks into the embedder's cache without keeping their vectors (an embedding helper's work,
        `runner.embedding_helpers`); how many this process embedded (0 without a cache)."""
        fill = getattr(self.embedder, "fill", None)
        return fill(ChunkTexts(chunks), role="passage") if fill is not None else 0

    def index(self, chunks: Sequence[Chunk]) -> None:
        prepared, self._prepared = self._prepared, None
        vectors = (prepared[1] if prepared is not None and prepared[0] is chunks
                   else self.embedder.encode(ChunkTexts(chunks), role="passage"))
        self.store.add(vectors)

    def search(self, questions: Sequence[str], k: int) -> list[list[Hit]]:
        return self.store.search(self.embedder.encode(questions, role="query"), k)

    def search_breadth(self, k: int) -> int | None:
        """How many candidates the store weighs for a top k; None for an exact store (see `Retriever`)."""
        breadth = getattr(self.store, "search_breadth", None)
        return breadth(k) if breadth is not None else None

    def close(self) -> None:
        self._prepared = None
        close = getattr(self.store, "close", None)
        if close is not None:
            close()
