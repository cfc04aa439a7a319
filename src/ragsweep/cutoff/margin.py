"""Keep the hits within a relative margin of the best one."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragsweep.cutoff.base import check_min_hits, kept
from ragsweep.types import Hit


class MarginCutoff:
    """Passes on the top-k hits scoring within `margin` of the question's best, relative to it: a hit stays when
    score >= best - margin * |best|. Unlike a threshold it needs no knowledge of the scores' scale, so one setting
    serves dense and BM25 retrieval alike.

    Args:
        margin: the share of the best score a hit may fall below it (0: only hits tied with the best).
        min_hits: hits passed on whatever their score (the best first); at least the best is always within the
            margin, so 0 and 1 differ only for a question with no hits.
    """

    def __init__(self, margin: float = 0.1, min_hits: int = 1) -> None:
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < math.inf:
            raise ValueError(f"cutoff.margin must be a number >= 0 (a share of the best score), got {margin!r}")
        self.margin, self.min_hits = float(margin), check_min_hits("cutoff", min_hits)

    def cut(self, hits: Sequence[Sequence[Hit]]) -> list[list[Hit]]:
        return kept(hits, self._lowest, self.min_hits)

    def _lowest(self, query_hits: Sequence[Hit]) -> float:
        best = max((hit.score for hit in query_hits), default=math.inf)
        return best - self.margin * abs(best) if math.isfinite(best) else best
