"""The cached stages of one job: chunking, first-stage retrieval, reranking.

Each stage's cache key is built from the key of the stage before it, so a result is reused
exactly when everything it depends on is the same.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from tqdm.auto import tqdm

from ragsweep.cache import StageCache
from ragsweep.identity import fingerprint
from ragsweep.data.locate import LostText
from ragsweep.memo import remember
from ragsweep.retrieval.base import Retriever
from ragsweep.query.base import Rewrite
from ragsweep.runner.build import ConfigError, Pipeline
from ragsweep.runner.rewriting import fuse_rewrites, per_question_ms, search_texts
from ragsweep.types import Chunk, Dataset, Hit


def chunk_dataset(pipeline: Pipeline, dataset: Dataset) -> tuple[list[Chunk], str]:
    """All chunks of the dataset, in document-id order, and the key identifying them."""
    doc_ids = sorted(dataset.documents)
    key = fingerprint("chunks", dataset.fingerprint, pipeline.chunker.signature)
    chunker = pipeline.chunker.component

    def compute() -> dict[str, np.ndarray]:
        spans = []
        before = dict(getattr(chunker, "located", None) or {})  # a kept chunker has counted earlier chunkings
        for position, doc_id in enumerate(tqdm(doc_ids, desc="chunking", unit="doc", disable=len(doc_ids) < 2)):
            try:
                spans += [(position, c.start, c.end) for c in chunker.split(dataset.documents[doc_id])]
            except LostText as error:
                raise ConfigError(str(error)) from None
        located = getattr(chunker, "located", None)  # a splitter's strings, located: how many exactly, how many fuzzily
        return {"spans": np.array(spans, dtype=np.int64).reshape(-1, 3),
                **({"located": np.array([located[how] - before.get(how, 0) for how in ("exact", "fuzzy")])}
                   if located else {})}

    def load() -> list[Chunk]:
        arrays = pipeline.cache.get_or_compute("chunks", key, compute)
        if "located" in arrays:
            _LOCATED[key] = dict(zip(("located_exact", "located_fuzzy"), arrays["located"].tolist(), strict=True))
        documents = [dataset.documents[doc_id] for doc_id in doc_ids]
        spans = arrays["spans"]  # a column at a time: a million rows as lists would be a transient 140 MB
        chunks = [Chunk.of(documents[d], s, e) for d, s, e in zip(*(spans[:, column].tolist() for column in range(3)))]
        shaped = getattr(chunker, "retrieved_as", None)  # e.g. each chunk read with its headings
        return list(shaped(chunks, dataset.documents)) if shaped is not None else chunks

    if not pipeline.cache.enabled:
        chunks = load()
    elif key in _CHUNKS:  # the jobs of one process that share a chunking (stores, k, rerankers) share its list
        pipeline.cache.hits["chunks"] += 1
        chunks = _CHUNKS[key]
    else:
        chunks = remember(_CHUNKS, key, load, limit=4)
    if not chunks:
        raise ConfigError("the chunker produced no chunks; check chunker settings and the dataset's documents")
    k = pipeline.plan.k
    if k > len(chunks):
        raise ConfigError(f"k={k} is more than the {len(chunks)} chunks this chunker made of {dataset.name}, "
                          f"so every chunk would be retrieved; set k to {len(chunks)} or less")
    return chunks, key


_CHUNKS: dict[str, list[Chunk]] = {}
_LOCATED: dict[str, dict[str, int]] = {}  # per chunking key: a user's splitter's strings located exactly / fuzzily


def located_counts(chunks_key: str) -> dict[str, int]:
    """How many of a user's splitter's strings were found verbatim and how many by fuzzy search (empty for
    a chunker that returns spans)."""
    return _LOCATED.get(chunks_key, {})


LATENCY_QUERIES = 20  # questions timed one at a time for the latency percentiles


def first_stage(pipeline: Pipeline, chunks: Sequence[Chunk], chunks_key: str, questions: Sequence[str],
                seconds: dict[str, float] | None = None, rewrites: Sequence[Rewrite] | None = None
                ) -> tuple[list[list[Hit]], str, np.ndarray]:
    """Top-`depth` hits per question (the first max(k, reranker candidates) of them unless fused), the key
    identifying them, and per-query search milliseconds.

    A cached list is reused for a shallower request only where cutting it gives exactly what a
    search at that depth returns (see `_ranked_lists`). A fusing retriever (hybrid) has each of
    its ranked lists cached that way and fuses them at the requested depth, since fusion of each
    side's top `depth` depends on `depth`. With `rewrites` (a query rewriter's), every question's texts are
    searched as one batch, cached as any questions are, and each question's rankings fused by reciprocal rank.
    """
    if rewrites is not None:
        texts, owned = search_texts(rewrites)
        rankings, key, milliseconds = first_stage(pipeline, chunks, chunks_key, texts, seconds)
        keep = max(pipeline.plan.k, pipeline.plan.candidates)
        return (fuse_rewrites(rankings, owned, keep), fingerprint("rewritten", key, keep),
                per_question_ms(milliseconds, owned, latency_sample(len(owned))))
    retriever = pipeline.retriever.component
    depth = pipeline.plan.depth
    key = fingerprint("retrieval", chunks_key, pipeline.retriever.signature, texts_digest(questions))
    if not hasattr(retriever, "fuse"):  # only the head the reranker or the metrics read is unpacked
        keep = max(pipeline.plan.k, pipeline.plan.candidates)
        return _ranked_lists(pipeline, retriever, key, chunks, questions, keep=keep, seconds=seconds)
    sides = {name: _ranked_lists(pipeline, side, fingerprint(key, name), chunks, questions, seconds=seconds)
             for name, side in retriever.ranked_lists().items()}
    fused = retriever.fuse({name: hits for name, (hits, _, _) in sides.items()}, depth)
    search_ms = sum(milliseconds for _, _, milliseconds in sides.values())  # the sides run one after the other
    return fused, fingerprint("fused", [side_key for _, side_key, _ in sides.values()], depth), search_ms


def _ranked_lists(pipeline: Pipeline, retriever: Retriever, key: str, chunks: Sequence[Chunk],
                  questions: Sequence[str], keep: int | None = None, seconds: dict[str, float] | None = None
                  ) -> tuple[list[list[Hit]], str, np.ndarray]:
    """One retriever's top-`depth` hits (their first `keep`, when given), from the cache when an entry at least
    that deep is exact. When computed, the seconds of embedding the chunks, indexing and searching are added to
    `seconds` (`embedding`, `index`, `search`).

    An exact search (numpy, Qdrant's local mode, BM25) ranks by a total order, so its top d is the
    first d of any deeper list. An approximate one (HNSW) returns the first d of its candidate list,
    whose length `search_breadth(d)` reports: the key holds that breadth, so a list is only cut to
    a depth searched with the same breadth.
    """
    depth = pipeline.plan.depth
    breadth = getattr(retriever, "search_breadth", lambda k: None)(depth)
    if breadth is not None:
        key = fingerprint(key, "breadth", breadth)
    timer = _StageTimer(pipeline.cache, seconds if seconds is not None else {})

    def compute() -> dict[str, np.ndarray]:
        try:
            with timer.stage("index"):
                retriever.index(chunks)
            with timer.stage("search"):
                hits = retriever.search(questions, depth)
            with pipeline.cache.embeddings_bypassed():  # a user's question is in no cache
                milliseconds = per_query_ms(lambda i: retriever.search([questions[i]], depth),
                                            latency_sample(len(questions)))
            return {**_pack(hits, depth), "search_ms": milliseconds}
        finally:
            if hasattr(retriever, "close"):
                retriever.close()

    prepare = getattr(retriever, "prepare", None)
    if prepare is not None and pipeline.cache.enabled and not pipeline.cache.holds("retrieval", key):
        with timer.stage("index"):
            prepare(chunks)  # a job computing this same entry is then helped, not waited for
    arrays = pipeline.cache.get_or_compute("retrieval", key, compute, usable=lambda a: int(a["depth"]) >= depth)
    return _unpack(arrays, min(depth, keep or depth)), key, arrays["search_ms"]


def ranked_in_shards(pipeline: Pipeline, chunks: Sequence[Chunk], chunks_key: str,
                     questions: Sequence[str], shards: Sequence[tuple[int, int]], seconds: dict[str, float],
                     rewrites: Sequence[Rewrite] | None = None
                     ) -> tuple[list[list[Hit]], list[list[Hit]], np.ndarray, np.ndarray, list[int]]:
    """First-stage and reranked hits of every question (searched with its `rewrites`' texts when given), each shard
    of questions cached on its own (outside a race one shard, all questions; in a race the questions each round
    added), with per-query search and rerank milliseconds and the positions of the questions they timed (each
    shard's latency sample); adds each stage's seconds to `seconds`."""
    first, hits, search_ms, rerank_ms, timed = [], [], [], [], []
    seconds.update(retrieval=0.0, embedding=0.0, index=0.0, search=0.0, rerank=0.0)
    for start, end in shards:
        part = questions[start:end]
        started = time.perf_counter()
        shard_first, retrieval_key, shard_search_ms = first_stage(
            pipeline, chunks, chunks_key, part, seconds, rewrites[start:end] if rewrites is not None else None)
        middle = time.perf_counter()
        shard_hits, shard_rerank_ms = rerank(pipeline, chunks, part, shard_first, retrieval_key)
        seconds["retrieval"] += middle - started
        seconds["rerank"] += time.perf_counter() - middle
        first += shard_first
        hits += shard_hits
        search_ms.append(shard_search_ms)
        rerank_ms.append(shard_rerank_ms)
        timed += [start + position for position in latency_sample(end - start)]
    return first, hits, np.concatenate(search_ms), np.concatenate(rerank_ms), timed


def rerank(pipeline: Pipeline, chunks: Sequence[Chunk], questions: Sequence[str],
           hits: list[list[Hit]], retrieval_key: str) -> tuple[list[list[Hit]], np.ndarray]:
    """Reorder each question's first `candidates` hits, and per-query rerank milliseconds;
    pass-through (no time) without a reranker."""
    candidates = pipeline.plan.candidates
    if not candidates:
        return hits, np.zeros(0)
    key = fingerprint("rerank", retrieval_key, pipeline.reranker.signature)
    reranker = pipeline.reranker.component

    def compute() -> dict[str, np.ndarray]:
        heads = [h[:candidates] for h in hits]
        reordered = reranker.rerank(questions, chunks, heads)
        sample = latency_sample(len(questions))
        if getattr(reranker, "remote", False):  # timed by its own requests: asking again would be paid again
            milliseconds = np.array([reranker.request_ms[i] for i in sample])
        else:
            with pipeline.cache.embeddings_bypassed():
                milliseconds = per_query_ms(lambda i: reranker.rerank([questions[i]], chunks, [heads[i]]), sample)
        return {**_pack(reordered, candidates), "rerank_ms": milliseconds}

    arrays = pipeline.cache.get_or_compute("rerank", key, compute)
    return _unpack(arrays, candidates), arrays["rerank_ms"]

class _StageTimer:
    """Adds each timed stage's seconds to `seconds`, the embedding done inside it (`StageCache.seconds`) apart."""

    def __init__(self, cache: StageCache, seconds: dict[str, float]) -> None:
        self.cache, self.seconds = cache, seconds

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started, embedded = time.perf_counter(), self.cache.seconds["embedding"]
        try:
            yield
        finally:
            embedding = self.cache.seconds["embedding"] - embedded
            self.seconds["embedding"] = self.seconds.get("embedding", 0.0) + embedding
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started - embedding


def latency_sample(count: int) -> list[int]:
    """The questions timed one at a time (evenly spread, the same in every stage), by position."""
    return np.linspace(0, count - 1, min(LATENCY_QUERIES, count)).round().astype(int).tolist() if count else []


def per_query_ms(call: Callable[[int], object], sample: Sequence[int]) -> np.ndarray:
    """Milliseconds of `call(i)` for each i, after one untimed call: a first call pays for loading a
    model or warming a store, which no later question pays."""
    if not sample:
        return np.zeros(0)
    call(sample[0])
    milliseconds = []
    for position in sample:
        started = time.perf_counter()
        call(position)
        milliseconds.append(1000 * (time.perf_counter() - started))
    return np.array(milliseconds)


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


def texts_digest(texts: Sequence[str]) -> str:
    """sha256 of the texts in order: the questions' part of a retrieval's cache key."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode() + b"\0")
    return digest.hexdigest()
