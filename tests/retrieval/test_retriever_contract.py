"""The ranking contract on every option of conf/retriever/, each built as a sweep builds it (handed an
embedder, the default store and the stage cache): per question, at most k distinct chunks, best first."""

from __future__ import annotations

import pytest

from ragsweep.cache import StageCache
from ragsweep.types import Chunk
from tests.conf_options import compose_option, instantiate_group, options
from tests.stores.ranking import assert_ranked

RETRIEVERS = options("retriever")
TEXTS = [
    "The Harbour Bridge was opened in 1932 by the mayor.",
    "It carries eight lanes of traffic and two railway tracks.",
    "The river freezes every January.",
    "Ferries stop running until the ice melts in March.",
    "The city library holds two million books.",
    "It was founded in 1851 by a merchant.",
    "The river freezes every January.",  # a copy of chunk 2: equal scores, which go to the earlier chunk
    "Quantum chromodynamics describes the strong interaction.",
]
CHUNKS = [Chunk(f"doc{i // 2}", 0, len(text), text) for i, text in enumerate(TEXTS)]
QUESTIONS = [
    "When was the bridge opened?",
    "When does the river freeze?",
    "Who founded the library?",
    "the of and",  # stopwords only: BM25 scores every chunk 0
    "zyxwv",  # no word of the corpus
]


@pytest.fixture(scope="module")
def embedder():
    """conf/embedder/static.yaml, the fastest embedder, loaded once for every retriever that asks for one."""
    return instantiate_group(compose_option("embedder", "static", "embedder.progress=false"), "embedder")


@pytest.mark.parametrize("option", RETRIEVERS)
def test_hits_are_ranked_distinct_and_at_most_k(option, embedder, tmp_path):
    cfg = compose_option("retriever", option)
    retriever = instantiate_group(cfg, "retriever", embedder=embedder, store=instantiate_group(cfg, "store"),
                                  cache=StageCache(tmp_path, enabled=False))
    try:
        retriever.index(CHUNKS)
        for k in (1, 3, len(CHUNKS) + 5):
            results = retriever.search(QUESTIONS, k)
            assert len(results) == len(QUESTIONS)
            for hits in results:
                assert_ranked(hits, k, len(CHUNKS))
        [river] = retriever.search(["When does the river freeze?"], 2)
        assert [hit.index for hit in river] == [2, 6]  # the one chunk on it and its copy, in corpus order
    finally:
        getattr(retriever, "close", lambda: None)()
