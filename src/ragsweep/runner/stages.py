"""The cached stages of one job: chunking, first-stage retrieval, reranking.

Each stage's cache key is built from the key of the stage before it, so a result is reused
exactly when everything it depends on is the same.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence

import numpy as np
from tqdm.auto import tqdm

from ragsweep.cache import fingerprint
from ragsweep.memo import remember
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

    def load() -> list[Chunk]:
        spans = pipeline.cache.get_or_compute("chunks", key, compute)["spans"]
        return [Chunk(doc_ids[d], s, e, dataset.documents[doc_ids[d]].text[s:e]) for d, s, e in spans.tolist()]

    if not pipeline.cache.enabled:
        chunks = load()
    elif key in _CHUNKS:  # the jobs of one process that share a chunking (stores, k, rerankers) share its list
        pipeline.cache.hits["chunks"] += 1
        chunks = _CHUNKS[key]
    else:
        chunks = remember(_CHUNKS, key, load, limit=4)
    if not chunks:
        raise ConfigError("the chunker produced no chunks; check chunker settings and the dataset's documents")
    return chunks, key


_CHUNKS: dict[str, list[Chunk]] = {}


def first_stage(pipeline: Pipeline, chunks: Sequence[Chunk], chunks_key: str,
                questions: Sequence[str]) -> tuple[list[list[Hit]], str, float]:
    """Top-`depth` hits per question, their key, and the seconds the search took when it ran.

    The index is built only when the hits are not cached; the search time is kept with them, so
    a run served from the cache still reports what its retrieval costs.
    """
    key = fingerprint("retrieval", chunks_key, pipeline.retriever.signature, _digest(questions))
    depth = pipeline.depth

    def compute() -> dict[str, np.ndarray]:
        retriever = pipeline.retriever.component
        try:
            retriever.index(chunks)
            started = time.perf_counter()
            hits = retriever.search(questions, depth)
            return _pack(hits, depth, time.perf_counter() - started)
        finally:
            if hasattr(retriever, "close"):
                retriever.close()

    arrays = pipeline.cache.get_or_compute("retrieval", key, compute, usable=lambda a: int(a["depth"]) >= depth)
    return _unpack(arrays, max(pipeline.k, pipeline.candidates)), key, _seconds(arrays)  # not all `depth` hits


def rerank(pipeline: Pipeline, chunks: Sequence[Chunk], questions: Sequence[str],
           hits: list[list[Hit]], retrieval_key: str) -> tuple[list[list[Hit]], float]:
    """Reorder each question's first `candidates` hits, and the seconds that took; pass-through without a reranker."""
    candidates = pipeline.candidates
    if not candidates:
        return hits, 0.0
    key = fingerprint("rerank", retrieval_key, pipeline.reranker.signature)

    def compute() -> dict[str, np.ndarray]:
        started = time.perf_counter()
        reordered = pipeline.reranker.component.rerank(questions, chunks, [h[:candidates] for h in hits])
        return _pack(reordered, candidates, time.perf_counter() - started)

    arrays = pipeline.cache.get_or_compute("rerank", key, compute)
    return _unpack(arrays, candidates), _seconds(arrays)


def _pack(hits: Sequence[Sequence[Hit]], depth: int, seconds: float) -> dict[str, np.ndarray]:
    indices = np.full((len(hits), depth), -1, dtype=np.int64)
    scores = np.zeros((len(hits), depth), dtype=np.float64)
    for row, query_hits in enumerate(hits):
        for col, hit in enumerate(query_hits[:depth]):
            indices[row, col], scores[row, col] = hit.index, hit.score
    return {"indices": indices, "scores": scores, "depth": np.array(depth), "seconds": np.array(seconds)}


def _unpack(arrays: dict[str, np.ndarray], count: int) -> list[list[Hit]]:
    """The first `count` hits of each row (padding, -1, dropped)."""
    indices, scores = arrays["indices"][:, :count].tolist(), arrays["scores"][:, :count].tolist()
    return [[Hit(i, s) for i, s in zip(row_i, row_s) if i >= 0] for row_i, row_s in zip(indices, scores)]


def _seconds(arrays: dict[str, np.ndarray]) -> float:
    return float(arrays["seconds"]) if "seconds" in arrays else float("nan")  # entries cached before timing was kept


def _digest(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode() + b"\0")
    return digest.hexdigest()
