"""Exact and approximate stores against each other on the same vectors."""

from __future__ import annotations

import numpy as np
import pytest

from ragsweep.stores.chroma import ChromaStore
from ragsweep.stores.numpy import NumpyStore
from ragsweep.stores.qdrant import QdrantStore


@pytest.fixture(scope="module")
def vectors():
    rng = np.random.default_rng(3)
    return rng.normal(size=(1500, 48)).astype(np.float32), rng.normal(size=(120, 48)).astype(np.float32)


def _search(store, data, queries, k):
    store.add(data[:700].copy())  # a store takes the array it is given
    store.add(data[700:].copy())  # stores grow across calls, indices continue
    return store.search(queries, k)


def test_qdrant_returns_the_exact_rankings(vectors):
    data, queries = vectors
    exact = _search(NumpyStore(), data, queries, 10)
    local = _search(QdrantStore(query_batch=50), data, queries, 10)
    assert [[h.index for h in hits] for hits in local] == [[h.index for h in hits] for hits in exact]
    assert np.allclose([h.score for hits in local for h in hits], [h.score for hits in exact for h in hits], atol=1e-5)


def test_chroma_defaults_keep_recall_at_least_099(vectors):
    data, queries = vectors
    exact = _search(NumpyStore(), data, queries, 10)
    approx = _search(ChromaStore(), data, queries, 10)
    recall = np.mean([len({h.index for h in a} & {h.index for h in e}) / 10 for a, e in zip(approx, exact)])
    assert recall >= 0.99
    assert all(len(hits) == 10 and hits[0].score >= hits[-1].score for hits in approx)


@pytest.mark.parametrize("store", [NumpyStore, QdrantStore, ChromaStore])
def test_k_beyond_the_collection(store):
    instance = store()
    instance.add(np.eye(4, dtype=np.float32))
    hits = instance.search(np.ones((1, 4), dtype=np.float32), k=50)[0]
    assert sorted(h.index for h in hits) == [0, 1, 2, 3]


@pytest.mark.parametrize("build", [lambda: ChromaStore(ef_search=0), lambda: QdrantStore(query_batch=0), lambda: NumpyStore(0)])
def test_bad_settings_are_refused(build):
    with pytest.raises(ValueError, match=r"store\.\w+ must be > 0"):
        build()



def test_numpy_store_batches_fewer_queries_over_many_chunks_with_the_same_rankings(vectors, monkeypatch):
    """Over many chunks one product's scores stay within `SCORES_BUDGET`: with a budget of two queries' scores
    it multiplies two queries at a time, and the rankings equal one product over every query."""
    import ragsweep.stores.numpy as numpy_store

    data, queries = vectors
    whole = _search(NumpyStore(batch_size=256), data, queries, 10)
    monkeypatch.setattr(numpy_store, "SCORES_BUDGET", 2 * len(data))
    store = NumpyStore(batch_size=256)
    batched = _search(store, data, queries, 10)
    # BLAS may sum a product of two rows in another order than one of every row: the last float32 digit moves
    assert [[hit.index for hit in hits] for hits in batched] == [[hit.index for hit in hits] for hits in whole]
    assert np.allclose([[hit.score for hit in hits] for hits in batched],
                       [[hit.score for hit in hits] for hits in whole], rtol=0, atol=1e-6)
    assert store.queries_per_product() == 2
