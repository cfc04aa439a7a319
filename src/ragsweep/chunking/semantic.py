"""Semantic chunking: group adjacent small pieces so that each chunk's pieces resemble each other.

The cluster approach of Chroma's ClusterSemanticChunker: cut the document into ~`piece_size`-token
pieces, embed them, and choose the split into runs of at most `size // piece_size` pieces that
maximises the summed pairwise similarity inside runs, with similarities centred on their mean
(so joining dissimilar pieces costs). Dynamic programming finds the exact optimum; only
similarities within `size // piece_size` pieces of each other are ever needed.
"""

from __future__ import annotations

import numpy as np

from ragsweep.chunking.base import check_size_overlap, make_chunk
from ragsweep.chunking.recursive import RecursiveChunker
from ragsweep.embedding.base import Embedder
from ragsweep.types import Chunk, Document


class SemanticChunker:
    """Args:
    embedder: The pipeline's embedder (passed in by the runner; piece vectors are cached).
    size: Maximum chunk length in tokens (>= piece_size).
    piece_size: Token length of the pieces that are grouped (recursive split, no overlap).
    encoding: tiktoken encoding that defines a token.
    """

    def __init__(self, embedder: Embedder, size: int = 400, piece_size: int = 50, encoding: str = "cl100k_base") -> None:
        check_size_overlap(size, 0)
        if not 0 < piece_size <= size:
            raise ValueError(f"chunker.piece_size must be in (0, chunker.size={size}], got {piece_size}")
        self.embedder = embedder
        self.size = size
        self.overlap = 0
        self.piece_size = piece_size
        self.pieces = RecursiveChunker(size=piece_size, overlap=0, encoding=encoding)

    def split(self, doc: Document) -> list[Chunk]:
        pieces = self.pieces.split(doc)
        if len(pieces) <= 1:
            return pieces
        vectors = np.asarray(self.embedder.encode([piece.text for piece in pieces]), dtype=np.float64)
        runs = best_runs(vectors, max(1, self.size // self.piece_size))
        return [make_chunk(doc, pieces[first].start, pieces[last - 1].end) for first, last in runs]


def best_runs(vectors: np.ndarray, max_run: int) -> list[tuple[int, int]]:
    """[first, last) piece ranges maximising the sum of centred within-run similarities."""
    n = len(vectors)
    total = vectors.sum(axis=0)
    mean = (total @ total - (vectors * vectors).sum()) / (n * (n - 1))  # mean over pairs i != j
    # band[j, d] = centred similarity of pieces j and j + d (d = 1 .. max_run - 1)
    band = np.zeros((n, max_run))
    for d in range(1, min(max_run, n)):
        band[: n - d, d] = (vectors[: n - d] * vectors[d:]).sum(axis=1) - mean
    best = np.full(n + 1, -np.inf)
    best[0] = 0.0
    start = np.zeros(n + 1, dtype=np.int64)
    for end in range(1, n + 1):
        inside = 0.0  # summed similarity of pairs within run [first, end)
        for first in range(end - 1, max(end - max_run, 0) - 1, -1):
            inside += 2 * band[first, 1 : end - first].sum()
            if best[first] + inside > best[end]:
                best[end], start[end] = best[first] + inside, first
    runs, end = [], n
    while end > 0:
        runs.append((int(start[end]), end))
        end = int(start[end])
    return runs[::-1]
