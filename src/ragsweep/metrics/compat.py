"""chunking_evaluation's token metrics, reproduced exactly (`metrics.mode=chroma_compat`).

Its semantics differ from `token.py` in four ways (brandonstarxel/chunking_evaluation,
`base_evaluation.py` and `evaluation_utils.py`):
- units are characters;
- a chunk and a reference that merely touch (end == start) count as intersecting;
- the precision and IoU denominators are plain sums of retrieved chunk lengths (overlapping
  chunks count twice), and the IoU denominator adds the reference characters no chunk covered;
- chunk positions are where the chunk's text first occurs in its document, after dropping one
  trailing "." (its `rigorous_document_search`); see `relocate_like_chunking_evaluation`.
Precision-Ω uses unions, as there. Empty inputs give 0.0.
"""

from __future__ import annotations

import numpy as np

from ragsweep.metrics.intervals import overlap_matrix, pairwise_intersections, union_length
from ragsweep.metrics.token import token_ratios


def compat_token_scores(retrieved: np.ndarray, references: np.ndarray) -> dict[str, float]:
    """Recall, precision, IoU and F1 over the retrieved chunks (all of them, in any document)."""
    covered = pairwise_intersections(retrieved, references, touching=True)
    shared = union_length(covered)
    retrieved_sum = int((retrieved[:, 1] - retrieved[:, 0]).sum())
    reference_sum = int((references[:, 1] - references[:, 0]).sum())
    uncovered = sum(int(ref[1] - ref[0]) - _covered_within(ref, covered) for ref in references)
    return token_ratios(shared, retrieved_sum, reference_sum, retrieved_sum + uncovered)


def compat_precision_omega(all_chunks: np.ndarray, references: np.ndarray) -> float:
    """|union of intersections| / |union of touching chunks and references|."""
    if len(references) == 0:
        return 0.0
    touching = all_chunks[overlap_matrix(all_chunks, references, touching=True).any(axis=1)]
    shared = union_length(pairwise_intersections(touching, references, touching=True))
    return shared / union_length(np.concatenate((touching, references))) if shared else 0.0


def _covered_within(ref: np.ndarray, covered: np.ndarray) -> int:
    """How many characters of `ref` lie in the union of `covered`."""
    clipped = np.stack((np.maximum(covered[:, 0], ref[0]), np.minimum(covered[:, 1], ref[1])), axis=1)
    return union_length(clipped[clipped[:, 0] < clipped[:, 1]])


def relocate_like_chunking_evaluation(document: str, chunk_text: str) -> tuple[int, int]:
    """Where chunking_evaluation believes a chunk sits: the first occurrence of its text."""
    target = chunk_text[:-1] if chunk_text.endswith(".") else chunk_text
    start = document.find(target)
    if start == -1:  # cannot happen for span-exact chunks; kept honest rather than guessed
        raise ValueError(f"chunk text not found in its document: {chunk_text[:60]!r}")
    return start, start + len(target)
