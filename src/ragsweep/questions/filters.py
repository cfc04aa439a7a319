"""The screens a drafted question passes before it is kept, as pure functions of vectors, spans and scores.

The defaults follow the tools that introduced each screen: excerpt relevance and duplicates as in
Chroma's chunking_evaluation (cosine >= 0.40 to its excerpts; dropped above 0.70 to an earlier
question), the round trip as in ARES (kept only if a reference retriever finds its source again).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragsweep.types import Span


def cosines(vector: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Cosine of `vector` with each row of `others` (an empty array for no rows)."""
    others = np.asarray(others, dtype=np.float64).reshape(-1, len(vector))
    norms = np.maximum(np.linalg.norm(others, axis=1) * np.linalg.norm(vector), 1e-12)
    return others @ np.asarray(vector, dtype=np.float64) / norms


def excerpt_relevance(question: np.ndarray, excerpts: np.ndarray) -> float:
    """The cosine of the question with its least related excerpt: one off-topic excerpt sinks the question."""
    return float(np.min(cosines(question, excerpts)))


def nearest_kept(question: np.ndarray, kept: np.ndarray) -> tuple[float, int | None]:
    """The highest cosine to a question kept before, and that question's position (0.0, None when none)."""
    similarities = cosines(question, kept)
    if not len(similarities):
        return 0.0, None
    position = int(np.argmax(similarities))
    return float(similarities[position]), position


def overlaps(a: Span, b: Span) -> bool:
    """Whether two spans share a character."""
    return a.doc_id == b.doc_id and a.start < b.end and b.start < a.end


def round_trip_rank(retrieved: Sequence[Span], references: Sequence[Span]) -> int | None:
    """The 1-based rank of the first retrieved span that overlaps a reference, or None (ARES keeps a
    question only when retrieval finds its source again)."""
    return next((rank for rank, span in enumerate(retrieved, start=1)
                 if any(overlaps(span, reference) for reference in references)), None)


def supported_share(scores: Sequence[Sequence[float]], threshold: float) -> float:
    """The share of an answer's claims whose best support over the excerpts reaches `threshold`
    (`scores[c][e]`: claim c in excerpt e); 0.0 for an answer with no claim."""
    if not scores:
        return 0.0
    return sum(max(row, default=0.0) >= threshold for row in scores) / len(scores)
