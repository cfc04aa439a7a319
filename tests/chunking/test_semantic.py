"""Semantic chunking: exact spans, size bound, and an optimal dynamic programme."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragsweep.chunking.semantic import SemanticChunker, best_runs
from ragsweep.embedding.static import StaticEmbedder
from ragsweep.types import Document


def _score(vectors: np.ndarray, runs) -> float:
    n = len(vectors)
    sims = vectors @ vectors.T
    mean = sims[np.triu_indices(n, 1)].mean()
    return sum((sims[a:b, a:b] - mean).sum() - np.trace(sims[a:b, a:b] - mean) for a, b in runs)


def _all_splits(n: int, max_run: int):
    for cuts in itertools.product([False, True], repeat=n - 1):
        bounds = [0] + [i + 1 for i, cut in enumerate(cuts) if cut] + [n]
        runs = list(zip(bounds, bounds[1:]))
        if all(b - a <= max_run for a, b in runs):
            yield runs


@pytest.mark.parametrize("seed", range(6))
def test_dynamic_programme_finds_the_best_split(seed):
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(8, 5))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    best = max(_score(vectors, runs) for runs in _all_splits(8, 3))  # brute force over every split
    runs = best_runs(vectors, 3)
    assert _score(vectors, runs) == pytest.approx(best)
    assert runs[0][0] == 0 and runs[-1][1] == 8 and all(b - a <= 3 for a, b in runs)


@pytest.fixture(scope="module")
def chunker():
    return SemanticChunker(StaticEmbedder(progress=False), size=40, piece_size=10)


@given(text=st.text(alphabet=st.sampled_from("abc def. ghi! jk\n\n"), max_size=600))
@settings(max_examples=40, deadline=None)
def test_semantic_chunks_are_exact_and_in_order(chunker, text):
    chunks = chunker.split(Document("d", text))
    assert all(chunk.text == text[chunk.start : chunk.end] for chunk in chunks)
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    assert all(a.end <= b.start for a, b in zip(chunks, chunks[1:]))


def test_semantic_chunks_group_related_sentences(chunker):
    sports = "The striker scored a goal. The goalkeeper saved a penalty. The team won the match. "
    cooking = "Whisk the eggs with sugar. Bake the cake in the oven. Let the dough rest overnight. "
    chunks = chunker.split(Document("d", sports * 2 + cooking * 2))
    topics = [("goal" in c.text or "match" in c.text, "cake" in c.text or "dough" in c.text or "eggs" in c.text)
              for c in chunks]
    assert not any(is_sport and is_cooking for is_sport, is_cooking in topics)  # no chunk straddles the change


def test_piece_size_must_fit():
    with pytest.raises(ValueError, match=r"chunker.piece_size must be in \(0, chunker.size=40\]"):
        SemanticChunker(StaticEmbedder(), size=40, piece_size=50)
