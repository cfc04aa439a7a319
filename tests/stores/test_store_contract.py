"""The ranking contract on every option of conf/store/: per query, at most k distinct stored vectors,
best first, ties in the order they were added, whether the vectors came in one call or several."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conf_options import compose_option, instantiate_group, options
from tests.stores.ranking import assert_ranked

STORES = options("store")


@pytest.fixture(scope="module")
def vectors() -> tuple[np.ndarray, np.ndarray]:
    """40 stored vectors, rows 5 and 17 copies of row 3 (three tied scores for any query), and 6 queries,
    the last of them row 3 itself."""
    rng = np.random.default_rng(7)
    stored = rng.normal(size=(40, 16)).astype(np.float32)
    stored[[5, 17]] = stored[3]
    queries = np.vstack([rng.normal(size=(5, 16)), stored[3:4]]).astype(np.float32)
    return stored, queries


@pytest.mark.parametrize("option", STORES)
def test_hits_are_ranked_distinct_and_at_most_k(option, vectors):
    stored, queries = vectors
    store = instantiate_group(compose_option("store", option), "store")
    try:
        store.add(stored[:25].copy())  # a store takes the array it is given
        store.add(stored[25:].copy())  # indices continue across calls
        for k in (1, 4, len(stored) + 10):
            results = store.search(queries, k)
            assert len(results) == len(queries)
            for hits in results:
                assert_ranked(hits, k, len(stored))
        [*_, closest] = store.search(queries, 3)
        assert [hit.index for hit in closest] == [3, 5, 17]  # the query's copies, tied, in the order added
    finally:
        getattr(store, "close", lambda: None)()


@pytest.mark.parametrize("option", STORES)
def test_a_closed_store_indexes_anew(option, vectors):
    """A job may index, search and close a store twice (a race's round computing two shards): the second index
    holds the vectors once, not twice over."""
    stored, queries = vectors
    store = instantiate_group(compose_option("store", option), "store")
    for _ in range(2):
        store.add(stored.copy())
        for hits in store.search(queries, len(stored) + 10):
            assert_ranked(hits, len(stored) + 10, len(stored))
        store.close()
