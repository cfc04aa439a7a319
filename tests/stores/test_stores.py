"""Exact and approximate stores against each other on the same vectors."""

from __future__ import annotations

import numpy as np
import pytest

from ragsweep.stores.base import KeptIndexes
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


def _index(store):
    """The built index a store searches: its Chroma collection or its Qdrant client."""
    return store._collection if isinstance(store, ChromaStore) else store._client


@pytest.mark.parametrize("build", [ChromaStore, QdrantStore])
def test_the_next_store_given_the_same_vectors_searches_the_index_built_before(build, vectors):
    """A race's next round makes a new store over the same chunks: it searches the index the last store built,
    kept in the process when that store closed, instead of building it again. A store alive beside it, or
    given other vectors, builds its own; more vectors added make the kept index the store's own."""
    data, queries = vectors
    first = build()
    first.add(data.copy())
    beside = build()
    beside.add(data.copy())  # the kept index is lent to `first` while it is open: one of its own, kept instead
    built, expected = _index(beside), beside.search(queries, 10)
    assert built is not _index(first)
    beside.close(), first.close()  # first's, no longer kept, is freed
    again = build()
    again.add(data.copy())
    assert _index(again) is built and again.search(queries, 10) == expected
    again.add(data[:5].copy())  # grown: no longer the index of `data`
    again.close()
    other = build()
    other.add(data.copy())
    assert _index(other) is not built and len(other.search(queries, 10)) == len(queries)  # Chroma's graph: unseeded
    other.close()


def test_kept_indexes_stay_within_their_budget_least_recently_used_first():
    a, b, c = (object() for _ in range(3))
    freed = []
    kept = KeptIndexes(freed.append, budget=100)
    for name, index in (("a", a), ("b", b), ("c", c)):
        assert kept.take((name,)) is None
        kept.make_room(40)
        kept.keep((name,), index, 40)
        assert kept.give_back(index)
    assert freed == [a] and kept.take(("b",)) is b  # 3 x 40 > 100: the oldest went; b is lent now
    assert kept.take(("b",)) is None  # to one store at a time
    kept.make_room(90)  # c goes (b is lent); b stays although 40 + 90 > 100
    assert freed == [a, c] and kept.give_back(b) and not kept.give_back(c)
    kept.release(b)  # its store added vectors: no longer the index of its key, and the store's to free
    assert kept.take(("b",)) is None and freed == [a, c]


def test_a_kept_chroma_collection_searches_at_its_own_breadth(vectors):
    """A search deeper than ef_search raises the collection's ef_search; the next store searching the kept
    collection at a shallower k weighs ef_search candidates again, as a fresh collection does."""
    data, queries = vectors
    store = ChromaStore(ef_search=12, ef_construction=12, max_neighbors=4)  # small: approximate on 1,500 vectors
    store.add(data.copy())
    fresh = store.search(queries, 10)
    store.search(queries, 400)
    store.close()
    again = ChromaStore(ef_search=12, ef_construction=12, max_neighbors=4)
    again.add(data.copy())
    assert again.search(queries, 10) == fresh
    again.close()


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
