"""A job's questions through its first stages, to the passages each is ranked: chunks, rewrites, rankings.

A run (`job.run_job`) and its estimate (`estimating.job_calls.planned_calls`) take the questions through these
stages the same way, so both know the same prompts; they differ only in where a rewrite comes from (the rewriter, or
the stage cache and, where it holds none, the question itself).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from ragsweep.query.base import Rewrite
from ragsweep.runner.build import Pipeline
from ragsweep.runner.stages import chunk_dataset, located_counts, ranked_in_shards
from ragsweep.runner.whole_retrieval import whole_retrieval_in_shards
from ragsweep.types import Chunk, Dataset, Hit

T = TypeVar("T")
Rewriting = Callable[[Sequence[str]], "list[Rewrite] | None"]  # questions -> their rewrites (None: no rewriter)


@dataclass(frozen=True)
class Ranked:
    """Each question's ranked chunks: first-stage `first`, reranked `hits` (the same without a reranker), per-query
    search and rerank milliseconds and the positions of the questions they timed, and the rewrites searched."""

    chunks: list[Chunk]
    located: dict[str, int]  # a user's splitter's strings located exactly / fuzzily
    first: list[list[Hit]]
    hits: list[list[Hit]]
    search_ms: np.ndarray
    rerank_ms: np.ndarray
    timed: list[int]
    rewrites: list[Rewrite] | None


def rank_questions(pipeline: Pipeline, whole: Dataset, questions: Sequence[str], shards: Sequence[tuple[int, int]],
                   rewriting: Rewriting, seconds: dict[str, float]) -> Ranked:
    """The `questions` ranked over the chunks of `whole` (the whole dataset: a race's round asks some of its
    questions), each of `shards` cached on its own; a whole retriever chunks and ranks on its own, and its texts
    are located as spans. Each stage's seconds are added to `seconds`."""
    if pipeline.plan.whole_retriever:
        chunks, first, search_ms, located, timed = timed_stage(
            seconds, "retrieval", lambda: whole_retrieval_in_shards(pipeline, whole, questions, shards))
        return Ranked(chunks, located, first, first, search_ms, np.zeros(0), timed, None)
    chunks, chunks_key = timed_stage(seconds, "chunking", lambda: chunk_dataset(pipeline, whole))
    rewrites = timed_stage(seconds, "query", lambda: rewriting(questions))
    first, hits, search_ms, rerank_ms, timed = ranked_in_shards(pipeline, chunks, chunks_key, questions, shards,
                                                                seconds, rewrites)
    return Ranked(chunks, located_counts(chunks_key), first, hits, search_ms, rerank_ms, timed, rewrites)


def timed_stage(seconds: dict[str, float], stage: str, work: Callable[[], T]) -> T:
    """`work()`, its wall time kept as `seconds[stage]`."""
    started = time.perf_counter()
    result = work()
    seconds[stage] = time.perf_counter() - started
    return result
