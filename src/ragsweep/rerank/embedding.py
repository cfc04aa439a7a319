"""Second-stage scoring with another embedder: cosine similarity of question and candidate chunks."""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.embedding.base import Embedder
from ragsweep.stores.base import ranked
from ragsweep.types import Chunk, Hit


class EmbeddingReranker:
    """Re-scores the first `candidates` hits with `rescoring_embedder` (e.g. e5 behind a MiniLM first stage).

    Args:
        rescoring_embedder: Any embedder config (a nested `_target_`); its vectors are cached like the main one's.
        candidates: First-stage hits re-scored per question (>= k).
    """

    def __init__(self, rescoring_embedder: Embedder, candidates: int = 20) -> None:
        if candidates <= 0:
            raise ValueError(f"reranker.candidates must be > 0, got {candidates}")
        self.rescoring_embedder = rescoring_embedder
        self.candidates = candidates

    def rerank(self, questions: Sequence[str], chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]]) -> list[list[Hit]]:
        needed = sorted({hit.index for query_hits in hits for hit in query_hits})
        row = {index: position for position, index in enumerate(needed)}
        passages = self.rescoring_embedder.encode([chunks[i].search_text for i in needed], role="passage")
        queries = self.rescoring_embedder.encode(questions, role="query")
        return [
            ranked([hit.index for hit in query_hits], [float(passages[row[hit.index]] @ query) for hit in query_hits])
            for query, query_hits in zip(queries, hits)
        ]
