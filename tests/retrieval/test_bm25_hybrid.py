"""Lexical retrieval and rank fusion."""

from __future__ import annotations

import numpy as np
import pytest

from ragsweep.cache import StageCache
from ragsweep.retrieval.bm25 import BM25Retriever
from ragsweep.retrieval.hybrid import HybridRetriever
from ragsweep.types import Chunk, Hit

TEXTS = ["the quick brown fox", "a lazy dog sleeps all day", "foxes and dogs are mammals", "quantum chromodynamics"]
CHUNKS = [Chunk("d", i, i + 1, text) for i, text in enumerate(TEXTS)]


def test_bm25_ranks_term_matches_first_and_caches_its_index(tmp_path):
    cache = StageCache(tmp_path)
    retriever = BM25Retriever(cache=cache)
    retriever.index(CHUNKS)
    hits = retriever.search(["lazy dog", "quantum", "the of and"], k=4)
    assert hits[0][0].index == 1 and hits[1][0].index == 3
    assert [h.score for h in hits[2]] == [0.0] * 4  # only stopwords: nothing matches, ties by index
    again = BM25Retriever(cache=cache)
    again.index(CHUNKS)
    assert cache.hits["bm25_index"] == 1
    assert [[h.index for h in q] for q in again.search(["lazy dog"], 4)] == [[h.index for h in hits[0]]]


def test_bm25_lets_go_of_its_index_when_closed_and_searches_the_same_once_indexed_again(tmp_path):
    retriever = BM25Retriever(cache=StageCache(tmp_path))
    retriever.index(CHUNKS)
    before = retriever.search(["fox dog"], 4)
    retriever.close()
    assert retriever._model is None and not retriever._vocab  # a race's kept configuration holds no index
    retriever.index(CHUNKS)
    assert retriever.search(["fox dog"], 4) == before


@pytest.mark.parametrize("method", ["lucene", "bm25+"])
def test_bm25_variants_survive_the_cache(tmp_path, method):
    cache = StageCache(tmp_path)
    scores = []
    for _ in range(2):
        retriever = BM25Retriever(method=method, cache=cache)
        retriever.index(CHUNKS)
        scores.append([h.score for h in retriever.search(["fox dog"], 4)[0]])
    assert scores[0] == scores[1]


def test_bm25_settings_are_validated():
    with pytest.raises(ValueError, match="retriever.k1 must be > 0"):
        BM25Retriever(k1=0)


class FixedRanking:
    """Stands in for one side of the fusion so the RRF arithmetic can be checked by hand."""

    def __init__(self, order):
        self.order = order

    def index(self, chunks):
        pass

    def search(self, questions, k):
        return [[Hit(i, 1.0) for i in self.order[:k]] for _ in questions]


def test_reciprocal_rank_fusion_by_hand():
    hybrid = HybridRetriever(embedder=None, store=None, rrf_k=60, dense_weight=1.0, bm25_weight=2.0)
    hybrid.dense, hybrid.bm25 = FixedRanking([0, 1, 2]), FixedRanking([2, 0, 3])
    (fused,) = hybrid.search(["q"], k=4)
    # 0: 1/61 + 2/62; 1: 1/62; 2: 1/63 + 2/61; 3: 2/63
    expected = {0: 1 / 61 + 2 / 62, 1: 1 / 62, 2: 1 / 63 + 2 / 61, 3: 2 / 63}
    assert [h.index for h in fused] == sorted(expected, key=lambda i: -expected[i])
    assert [h.score for h in fused] == pytest.approx(sorted(expected.values(), reverse=True))


def test_hybrid_with_real_parts_finds_both_kinds_of_match(tmp_path):
    from ragsweep.embedding.static import StaticEmbedder
    from ragsweep.stores.numpy import NumpyStore

    hybrid = HybridRetriever(StaticEmbedder(progress=False), NumpyStore(), cache=StageCache(tmp_path))
    hybrid.index(CHUNKS)
    hits = hybrid.search(["chromodynamics"], k=4)[0]
    assert hits[0].index == 3 and len({h.index for h in hits}) == 4
    assert np.all(np.diff([h.score for h in hits]) <= 0)
