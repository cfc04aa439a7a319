"""Chunk-level metrics: counts of whole chunks and whole references, not of tokens.

    chunk_recall    = references overlapped by at least one retrieved chunk / references
    chunk_precision = retrieved chunks that overlap at least one reference / retrieved chunks
    chunk_f1        = harmonic mean of the two

Overlap means sharing at least one character (true positions, half-open). With no reference or
no retrieved chunk every value is 0.0.
"""

from __future__ import annotations

import numpy as np

from ragsweep.metrics.intervals import overlap_matrix

CHUNK_METRICS = ("chunk_recall", "chunk_precision", "chunk_f1")


def chunk_scores(retrieved: np.ndarray, references: np.ndarray) -> dict[str, float]:
    if len(retrieved) == 0 or len(references) == 0:
        return dict.fromkeys(CHUNK_METRICS, 0.0)
    overlaps = overlap_matrix(retrieved, references)
    recall = float(overlaps.any(axis=0).mean())
    precision = float(overlaps.any(axis=1).mean())
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"chunk_recall": recall, "chunk_precision": precision, "chunk_f1": f1}
