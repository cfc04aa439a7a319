"""The cached stages of one job: chunking, first-stage retrieval, reranking.

Each stage's cache key is built from the key of the stage before it, so a result is reused
exactly when everything it depends on is the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from tqdm.auto import tqdm

from ragsweep.cache import fingerprint
from ragsweep.runner.build import ConfigError, Pipeline
from ragsweep.types import Chunk, Dataset, Hit


def chunk_dataset(pipeline: Pipeline, dataset: Dataset) -> tuple[list[Chunk], str]:
    """All chunks of the dataset, in document-id order, and the key identifying them."""
    doc_ids = sorted(dataset.documents)
    key = fingerprint("chunks", dataset.fingerprint, pipeline.chunker.signature)

    def compute() -> dict[str, np.ndarray]:
        spans = []
        for position, doc_id in enumerate(tqdm(doc_ids, desc="chunking", unit="doc", disable=len(doc_ids) < 2)):
            spans += [(position, c.start, c.end) for c in pipeline.chunker.component.split(dataset.documents[doc_id])]
        return {"spans": np.array(spans, dtype=np.int64).reshape(-1, 3)}

    spans = pipeline.cache.get_or_compute("chunks", key, compute)["spans"]
    chunks = [Chunk(doc_ids[d], s, e, dataset.documents[doc_ids[d]].text[s:e]) for d, s, e in spans.tolist()]
    if not chunks:
        raise ConfigError("the chunker produced no chunks; check chunker settings and the dataset's documents")
    return chunks, key


def first_stage(pipeline: Pipeline, chunks: Sequence[Chunk], chunks_key: str, questions: Sequence[str]) -> tuple[list[list[Hit]], str]:
    """Top-`depth` hits per question; the index is built only when they are not cached."""
    key = fingerprint("retrieval", chunks_key, pipeline.retriever.signature, _digest(questions))
    depth = pipeline.depth

    def compute() -> dict[str, np.ndarray]:
        retriever = pipeline.retriever.component
        try:
            retriever.index(chunks)
            return _pack(retriever.search(questions, depth), depth)
        finally:
            if hasattr(retriever, "close"):
                retriever.close()

    arrays = pipeline.cache.get_or_compute("retrieval", key, compute, usable=lambda a: int(a["depth"]) >= depth)
    return _unpack(arrays, max(pipeline.k, pipeline.candidates)), key  # not all `depth` hits


def rerank(pipeline: Pipeline, chunks: Sequence[Chunk], questions: Sequence[str],
           hits: list[list[Hit]], retrieval_key: str) -> list[list[Hit]]:
    """Reorder each question's first `candidates` hits; pass-through without a reranker."""
    candidates = pipeline.candidates
    if not candidates:
        return hits
    key = fingerprint("rerank", retrieval_key, pipeline.reranker.signature)

    def compute() -> dict[str, np.ndarray]:
        reordered = pipeline.reranker.component.rerank(questions, chunks, [h[:candidates] for h in hits])
        return _pack(reordered, candidates)

    return _unpack(pipeline.cache.get_or_compute("rerank", key, compute), candidates)


def _pack(hits: Sequence[Sequence[Hit]], depth: int) -> dict[str, np.ndarray]:
    indices = np.full((len(hits), depth), -1, dtype=np.int64)
    scores = np.zeros((len(hits), depth), dtype=np.float64)
    for row, query_hits in enumerate(hits):
        for col, hit in enumerate(query_hits[:depth]):
            indices[row, col], scores[row, col] = hit.index, hit.score
    return {"indices": indices, "scores": scores, "depth": np.array(depth)}


def _unpack(arrays: dict[str, np.ndarray], count: int) -> list[list[Hit]]:
    """The first `count` hits of each row (padding, -1, dropped)."""
    indices, scores = arrays["indices"][:, :count].tolist(), arrays["scores"][:, :count].tolist()
    return [[Hit(i, s) for i, s in zip(row_i, row_s) if i >= 0] for row_i, row_s in zip(indices, scores)]


def _digest(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode() + b"\0")
    return digest.hexdigest()
