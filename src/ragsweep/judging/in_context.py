"""A passage's relevance judged beside the other passages retrieved for the same question.

The passages a retriever returns for a question all read close to it, so a judge that scores each pair alone
gives them similar scores, and whether a question's passages score high at all varies from question to
question. How a passage compares with the others retrieved with it is what tells the one holding the answer
apart, so its score is moved by its margin over them. The pairs are still judged (and cached) one by one; this
step only reads the scores of one question's passages together, and needs no spans.
"""

from __future__ import annotations

from collections.abc import Sequence


def in_context(scores: Sequence[float | None], weight: float) -> list[float | None]:
    """s'_i = clip(s_i + w · (s_i − mean_{j≠i} s_j), 0, 1) over one question's passages, w = `weight`.

    Failed calls (None) are left out of the means and stay None; a passage scored alone keeps its score. The
    margins of a question's passages sum to zero, so the question's mean relevance (context_relevance_judged)
    is kept, but where a score is clipped. A listwise score in the sense of learning to rank (Cao et al., 2007,
    "Learning to rank: from pairwise approach to listwise approach"), with a fixed weight instead of a learned one.
    """
    scored = [score for score in scores if score is not None]
    if weight == 0 or len(scored) < 2:
        return list(scores)
    total, others = sum(scored), len(scored) - 1
    return [None if score is None else min(1.0, max(0.0, score + weight * (score - (total - score) / others)))
            for score in scores]
