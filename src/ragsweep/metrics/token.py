"""Token-level metrics: how much of the answer text the retrieved chunks hold, and how much else.

All take intervals on the unit line (tokens or characters, see `units.py`), true positions and
half-open intervals; overlapping chunks are counted once (unions). Definitions, with R the
retrieved chunks and G the reference spans:

    recall    = |R ∩ G| / |G|
    precision = |R ∩ G| / |R|
    iou       = |R ∩ G| / |R ∪ G|
    f1        = 2 · precision · recall / (precision + recall)
    precision_omega = iou with R = every chunk of the chunking that overlaps G

Precision-Ω (Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval", Chroma 2024) is the
best precision a chunking allows when retrieval is perfect. An empty R or G gives 0.0, never NaN.
"""

from __future__ import annotations

import numpy as np

from ragsweep.metrics.intervals import intersection_length, overlap_matrix, union_length

TOKEN_METRICS = ("token_recall", "token_precision", "token_iou", "token_f1")


def token_scores(retrieved: np.ndarray, references: np.ndarray) -> dict[str, float]:
    shared = intersection_length(retrieved, references)
    retrieved_len = union_length(retrieved)
    reference_len = union_length(references)
    return token_ratios(shared, retrieved_len, reference_len, retrieved_len + reference_len - shared)


def token_ratios(shared: int, retrieved: int, reference: int, either: int) -> dict[str, float]:
    """The four token metrics from their numerator and denominators (0.0 where one is 0)."""
    recall = shared / reference if reference else 0.0
    precision = shared / retrieved if retrieved else 0.0
    return {
        "token_recall": recall,
        "token_precision": precision,
        "token_iou": shared / either if either else 0.0,
        "token_f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
    }


def precision_omega(all_chunks: np.ndarray, references: np.ndarray) -> float:
    """IoU of the references with every chunk that overlaps them."""
    if len(references) == 0:
        return 0.0
    relevant = all_chunks[overlap_matrix(all_chunks, references).any(axis=1)]
    return token_scores(relevant, references)["token_iou"]
