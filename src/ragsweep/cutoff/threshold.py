"""Keep the hits that score at least a threshold."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragsweep.cutoff.base import check_min_hits, kept
from ragsweep.types import Hit


class ThresholdCutoff:
    """Passes on the top-k hits scoring at least `min_score`, so a question with one good passage is not handed
    k - 1 poor ones. Scores are the last ranking stage's (the reranker's, else the retriever's): cosine similarity
    for dense retrieval and the embedding reranker, BM25's unbounded scores for bm25, so a threshold belongs to
    one retriever and reranker.

    Args:
        min_score: the lowest score passed on.
        min_hits: hits passed on whatever their score (the best first); 0 lets a question have no passage.
    """

    def __init__(self, min_score: float, min_hits: int = 1) -> None:
        if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not math.isfinite(min_score):
            raise ValueError(f"cutoff.min_score must be a finite number, got {min_score!r}")
        self.min_score, self.min_hits = float(min_score), check_min_hits("cutoff", min_hits)

    def cut(self, hits: Sequence[Sequence[Hit]]) -> list[list[Hit]]:
        return kept(hits, lambda _: self.min_score, self.min_hits)
