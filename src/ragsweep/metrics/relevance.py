"""Context relevance from reference spans: which retrieved passages answer the question, known exactly.

A (question, passage) pair is labelled from character spans alone:

    label = 1     if |passage ∩ r| ≥ ½ |r| for some reference span r (it holds most of an answer)
    label = 0     if the passage overlaps no reference span
    no label      otherwise (it grazes a reference: neither clearly relevant nor clearly not)

On a dataset with spans these labels are the truth a relevance judge is measured against, and
`context_relevance` is computed from them, with no judge and at no cost.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.metrics import roc_auc_score

from ragsweep.types import Chunk, Span

RELEVANCE_METRICS = ("context_relevance",)  # from the span labels: every run whose passages are labelled
RELEVANCE_JUDGED = ("context_relevance_judged",)  # mean relevance a relevance_judge gives the top k
CONTAINED = 0.5  # share of a reference span a passage must hold to count as relevant


def span_relevance(passage: Span | Chunk, references: Sequence[Span], contained: float = CONTAINED) -> int | None:
    """1 if the passage (a span, or a chunk by its span) holds ≥ `contained` of some reference span, 0 if it
    overlaps none, else None."""
    overlapping = False
    for ref in references:
        if ref.doc_id == passage.doc_id:
            overlap = max(0, min(passage.end, ref.end) - max(passage.start, ref.start))
            length = ref.end - ref.start
            if length > 0 and overlap >= contained * length:
                return 1
            overlapping = overlapping or overlap > 0
    return None if overlapping else 0


def context_relevance(labels: Sequence[int | None]) -> float | None:
    """mean of the labels over the labelled passages of the top k: the share of passages that hold an
    answer (None when no passage is labelled). The span counterpart of RAGAS' context precision."""
    known = [label for label in labels if label is not None]
    return sum(known) / len(known) if known else None


def relevance_auc(scores: Sequence[float | None], labels: Sequence[int | None]) -> dict[str, float] | None:
    """ROC AUC (sklearn's `roc_auc_score`) of a judge's relevance scores against the span labels, over the
    pairs that have both, with n the pairs counted; None unless both labels occur."""
    pairs = [(score, label) for score, label in zip(scores, labels, strict=True)
             if score is not None and label is not None]
    if len({label for _, label in pairs}) < 2:
        return None
    y, s = np.array([label for _, label in pairs]), np.array([score for score, _ in pairs])
    return {"value": float(roc_auc_score(y, s)), "n": len(pairs), "positives": int(y.sum())}
