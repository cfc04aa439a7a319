"""A configuration's result never depends on what the stage cache already holds.

For every retriever and every reranker, a configuration run at depth 12 must give the same hits and
metrics on a cold cache, after a deeper run, after a shallower one and (for the approximate store)
after a deeper run that weighed the same candidates. Reciprocal-rank fusion over each side's top
`depth` is where a reused deeper list changed the result (ndcg 0.8021 cold, 0.7830 after depth=100).

Chroma is tested apart: its HNSW build is not deterministic (two builds of the same vectors in
one process return different top 12s), so two cold caches can differ whatever the cache does.
For it the test checks what the cache may reuse: a deeper list searched with the same candidate
breadth, and nothing else.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from ragsweep.data.loading import load_once
from ragsweep.runner.build import build
from ragsweep.runner.stages import chunk_dataset, first_stage, rerank

CONF = Path(__file__).resolve().parents[2] / "conf"
K, DEPTH = 5, 12
QUESTIONS = 30  # of sotu_qa's 68: what the cache may reuse does not depend on how many questions ask
RERANKED_QUESTIONS = 10  # with a reranker, whose model scores every candidate pair: the costliest stage
BEFORE = {"cold": [], "deeper": [60], "shallower": [6], "deeper_and_shallower": [100, 3]}  # depths run first
CONFIGS = {
    "dense-numpy": ["retriever=dense", "store=numpy"],
    "dense-qdrant": ["retriever=dense", "store=qdrant"],
    "bm25": ["retriever=bm25"],
    "hybrid-numpy": ["retriever=hybrid", "store=numpy"],
    "hybrid-qdrant": ["retriever=hybrid", "store=qdrant"],
    "hybrid-numpy+embedding": ["retriever=hybrid", "store=numpy", "reranker=embedding", "reranker.candidates=10"],
    "dense-qdrant+embedding": ["retriever=dense", "store=qdrant", "reranker=embedding", "reranker.candidates=10"],
    "hybrid-numpy+cross_encoder": ["retriever=hybrid", "store=numpy", "reranker=cross_encoder",
                                   "reranker.candidates=6"],  # the costliest stage: as few pairs as k allows
}


@pytest.fixture(scope="module")
def embeddings(tmp_path_factory) -> Path:
    """Per-text embeddings, computed once and copied into each scenario's cache: a vector does not
    depend on depth, and the test is about the stages after it."""
    return tmp_path_factory.mktemp("embeddings")


def _result(overrides: list[str], depth: int, cache: Path):
    from ragsweep.embedding.minilm import minilm_path

    model = [f"reranker.model={minilm_path()}"] if "reranker=cross_encoder" in overrides else []
    reranked = any(override.startswith("reranker=") for override in overrides)
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[*overrides, *model, f"k={K}", f"depth={depth}", "chunker.size=100",
                                           f"dataset.limit={RERANKED_QUESTIONS if reranked else QUESTIONS}",
                                           f"cache.dir={cache}", "embedder.progress=false"])
    pipeline = build(cfg)
    dataset = load_once(pipeline.dataset)
    _result.cache = pipeline.cache
    questions = [query.text for query in dataset.queries]
    chunks, chunks_key = chunk_dataset(pipeline, dataset)
    first, key, _ = first_stage(pipeline, chunks, chunks_key, questions)
    hits, _ = rerank(pipeline, chunks, questions, first, key)
    top = [[hit.index for hit in query_hits[:K]] for query_hits in hits]
    return top, pipeline.evaluator.score(dataset, chunks, hits, K)


@pytest.mark.slow
@pytest.mark.parametrize("name", CONFIGS)
def test_metrics_are_the_same_whatever_the_cache_holds(name, embeddings, tmp_path):
    overrides = CONFIGS[name]
    results = {}
    # the cross-encoder reranks the first stage's head whatever depth produced it: two scenarios cover it at half the
    # cost of the costliest stage (the first-stage depth logic is checked by every other configuration)
    scenarios = {s: BEFORE[s] for s in ("cold", "deeper_and_shallower")} if "cross_encoder" in name else BEFORE
    for scenario, before in scenarios.items():
        cache = tmp_path / scenario
        if any(embeddings.iterdir()):
            shutil.copytree(embeddings, cache / "embeddings")
        for depth in before:
            _result(overrides, depth, cache)
        results[scenario] = _result(overrides, DEPTH, cache)
        if (cache / "embeddings").is_dir():  # the next scenario starts with every vector computed so far
            shutil.copytree(cache / "embeddings", embeddings, dirs_exist_ok=True)
    cold_hits, cold_metrics = results["cold"]
    for scenario, (hits, metrics) in results.items():
        assert hits == cold_hits, f"{name}: top {K} after a {scenario} run differs from a cold cache"
        assert metrics == cold_metrics, f"{name}: metrics after a {scenario} run differ from a cold cache"


CHROMA = ["store=chroma", "store.ef_search=20"]  # breadth 20 for depths up to 20, the depth above it


@pytest.mark.slow
@pytest.mark.parametrize("retriever", ["dense", "hybrid"])
def test_chroma_reuses_a_deeper_list_only_when_it_weighed_the_same_candidates(retriever, tmp_path):
    overrides = [f"retriever={retriever}", *CHROMA]
    deeper_same_breadth, _ = _result(overrides, 18, tmp_path)
    reused, metrics = _result(overrides, DEPTH, tmp_path)
    assert _result.cache.misses["retrieval"] == 0, "a list searched with the same breadth is reused"
    if retriever == "dense":  # a cut list; hybrid re-fuses its sides' cut lists at depth 12
        assert reused == deeper_same_breadth
    _result(overrides, 60, tmp_path)
    assert _result.cache.misses["retrieval"] > 0, "a list searched with breadth 60 is not the top 12 of breadth 20"
    assert _result(overrides, DEPTH, tmp_path) == (reused, metrics)
    assert _result.cache.misses["retrieval"] == 0
