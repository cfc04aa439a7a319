"""A whole retriever's stage: it chunks and ranks on its own, and the texts it returns are located as spans."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from tqdm.auto import tqdm

from ragsweep.identity import fingerprint
from ragsweep.data.locate import locate_anywhere, lost_text_message
from ragsweep.runner.build import ConfigError, Pipeline
from ragsweep.runner.stages import latency_sample, texts_digest
from ragsweep.types import Chunk, Dataset, Hit


def whole_retrieval(pipeline: Pipeline, dataset: Dataset,
                    questions: Sequence[str]) -> tuple[list[Chunk], list[list[Hit]], np.ndarray, dict[str, int]]:
    """A whole retriever's top k per question, its texts located as spans: the chunks it returned (each
    distinct span once), the hits into them, per-query search milliseconds, and how many texts were
    located exactly and fuzzily. Cached like any retrieval, under the retriever's name and version."""
    retriever, k = pipeline.retriever.component, pipeline.plan.k
    doc_ids = sorted(dataset.documents)
    texts = {doc_id: dataset.documents[doc_id].text for doc_id in doc_ids}
    position_of = {doc_id: position for position, doc_id in enumerate(doc_ids)}
    key = fingerprint("whole_retrieval", pipeline.retriever.signature, dataset.fingerprint, texts_digest(questions), k)

    def compute() -> dict[str, np.ndarray]:
        sample = latency_sample(len(questions))
        if sample:
            retriever.retrieve(questions[sample[0]], k)  # untimed: a first call pays for loading and warming
        rows, scores, milliseconds, lost, exact = [], [], {}, [], 0
        for position, question in enumerate(tqdm(questions, desc="retrieving", unit="question",
                                                  disable=len(questions) < 20)):
            started = time.perf_counter()
            results = retriever.retrieve(question, k)
            milliseconds[position] = 1000 * (time.perf_counter() - started)
            for text, score in results:
                found = locate_anywhere(texts, text, retriever.min_similarity)
                if found is None:
                    lost.append(text)
                    continue
                doc_id, where = found
                rows.append((position, position_of[doc_id], where.start, where.end))
                scores.append(score)
                exact += where.exact
        if lost:
            raise ConfigError(lost_text_message(f"retriever {retriever.name or type(retriever.component).__name__}",
                                                "retriever", len(lost), len(rows) + len(lost), lost[0],
                                                retriever.min_similarity))
        return {"rows": np.array(rows, dtype=np.int64).reshape(-1, 4), "scores": np.array(scores, dtype=np.float64),
                "located": np.array([exact, len(rows) - exact]),
                "search_ms": np.array([milliseconds[i] for i in sample])}

    arrays = pipeline.cache.get_or_compute("retrieval", key, compute)
    chunk_of: dict[tuple[int, int, int], int] = {}
    hits: list[list[Hit]] = [[] for _ in questions]
    for (position, doc, start, end), score in zip(arrays["rows"].tolist(), arrays["scores"].tolist(), strict=True):
        index = chunk_of.setdefault((doc, start, end), len(chunk_of))
        hits[position].append(Hit(index, score))
    chunks = [Chunk(doc_ids[doc], start, end, texts[doc_ids[doc]][start:end]) for doc, start, end in chunk_of]
    located = dict(zip(("located_exact", "located_fuzzy"), arrays["located"].tolist(), strict=True))
    return chunks, hits, arrays["search_ms"], located


def whole_retrieval_in_shards(pipeline: Pipeline, dataset: Dataset, questions: Sequence[str],
                              shards: Sequence[tuple[int, int]]
                              ) -> tuple[list[Chunk], list[list[Hit]], np.ndarray, dict[str, int], list[int]]:
    """`whole_retrieval` of each shard of questions, cached on its own (a race's rounds add shards), merged: the
    distinct chunks of all shards, the hits into them, per-query milliseconds, located counts and the positions
    of the timed questions. `dataset` gives the documents and the cache key's fingerprint."""
    chunks: list[Chunk] = []
    index: dict[tuple[str, int, int], int] = {}
    hits: list[list[Hit]] = []
    search_ms, timed, located = [], [], {"located_exact": 0, "located_fuzzy": 0}
    for start, end in shards:
        part_chunks, part_hits, part_ms, part_located = whole_retrieval(pipeline, dataset, questions[start:end])
        renumbered = [index.setdefault((c.doc_id, c.start, c.end), len(index)) for c in part_chunks]
        chunks += [c for c, i in zip(part_chunks, renumbered, strict=True) if i >= len(chunks)]
        hits += [[Hit(renumbered[hit.index], hit.score) for hit in row] for row in part_hits]
        search_ms.append(part_ms)
        timed += [start + position for position in latency_sample(end - start)]
        located = {name: located[name] + part_located[name] for name in located}
    return chunks, hits, np.concatenate(search_ms), located, timed
