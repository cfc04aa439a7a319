"""Scoring grows with documents plus chunks, not with their product (benchmarks/scale.py holds the strict bound).

Scoring is timed on a corpus and on one four times larger, with the same questions: linear growth takes
at most 4 times as long (less, as the questions stay the same), a comparison of every chunk with every
document up to 16 times (11.3 at commit d434f8c, against 1.25 now). The bound (6) is loose enough that a busy
machine cannot fail it, and tight enough that quadratic work cannot pass.
"""

from __future__ import annotations

import random
import time

from ragsweep.metrics import evaluate
from ragsweep.metrics.evaluate import SpanEvaluator
from ragsweep.metrics.intervals import IntervalIndex, as_intervals, overlap_matrix
from ragsweep.types import Chunk, Dataset, Document, Hit, Query, Span

WORDS = "river stone maple quartz lantern harbor copper meadow falcon violet thunder ember glacier".split()
CHUNK = 100


def corpus(documents: int, seed: int = 0) -> tuple[Dataset, list[Chunk], list[list[Hit]]]:
    """`documents` documents of ~1,000 characters cut into 100-character chunks; 60 questions whose two
    references lie in the first 200 documents, each with 5 hits, some of them relevant."""
    rng = random.Random(seed)
    texts = {f"doc{i:06d}": " ".join(rng.choices(WORDS, k=160))[:1000] for i in range(documents)}
    docs = {doc_id: Document(doc_id, text) for doc_id, text in texts.items()}
    chunks = [Chunk(doc_id, start, min(start + CHUNK, len(text)), text[start : start + CHUNK])
              for doc_id, text in texts.items() for start in range(0, len(text), CHUNK)]
    rng = random.Random(seed + 1)
    queries, hits = [], []
    for number in range(60):
        refs = tuple(Span(f"doc{rng.randrange(200):06d}", start, start + 150)
                     for start in (rng.randrange(0, 800) for _ in range(2)))
        queries.append(Query(str(number), f"question {number}", refs))
        near = [i for i, chunk in enumerate(chunks[: 200 * 10]) if chunk.doc_id == refs[0].doc_id]
        hits.append([Hit(i, 1.0) for i in [*near[:2], *rng.sample(range(len(chunks)), 3)]])
    return Dataset(f"scale-{documents}", docs, queries), chunks, hits


def scoring_seconds(documents: int) -> float:
    dataset, chunks, hits = corpus(documents)
    best = float("inf")
    for _ in range(3):
        for remembered in (evaluate._FACTS, evaluate._FACTS_OF_LISTS, evaluate._UNIT_LINES):
            remembered.clear()  # each time from nothing, as a process's first job on a chunking
        started = time.perf_counter()
        SpanEvaluator().score(dataset, chunks, hits, k=5)
        best = min(best, time.perf_counter() - started)
    return best


def test_scoring_time_grows_about_linearly_with_the_corpus():
    small, large = scoring_seconds(1_250), scoring_seconds(5_000)
    assert large / small < 6, f"4x the corpus took {large / small:.1f}x the time ({small:.3f} s, {large:.3f} s)"


def test_interval_index_finds_what_comparing_every_pair_finds():
    rng = random.Random(3)
    for _ in range(200):
        starts = [rng.randrange(0, 300) for _ in range(rng.randrange(0, 40))]
        intervals = as_intervals([(s, s + rng.randrange(0, 60)) for s in starts])
        queries = as_intervals([(s, s + rng.randrange(0, 30)) for s in (rng.randrange(0, 320) for _ in range(3))])
        index = IntervalIndex(intervals)
        for touching in (False, True):
            expected = (overlap_matrix(intervals, queries, touching).any(axis=1).nonzero()[0].tolist()
                        if len(intervals) else [])
            assert index.meeting(queries, touching).tolist() == expected
