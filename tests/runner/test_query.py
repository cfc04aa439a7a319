"""Query rewriting run for real (SmolLM2 in process, BM25): each question's texts are searched and their rankings
fused by reciprocal rank (recomputed here from BM25 alone), rewrites are paid for once, and a rewrite that fails
searches with the question and is counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsweep.retrieval.base import reciprocal_rank

pytestmark = [pytest.mark.slow, pytest.mark.llama_cpp]
ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ["retriever=bm25", "k=3", "dataset.limit=4"]
LLAMA = "query/generator=llama_cpp"  # not the default (transformers): these tests' numbers are llama.cpp's


def _run(root: Path, out: str, *overrides: str):
    from hydra import compose, initialize_config_dir

    from ragsweep.runner.plan import plan_job
    from ragsweep.runner.run import RunContext, run

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[*SETTINGS, *overrides, f"paths.root={root}"])
    run(plan_job(cfg), RunContext(root / out))
    records = [json.loads(line) for line in (root / out / "per_query.jsonl").read_text().splitlines()]
    return records, json.loads((root / out / "mlflow_run.json").read_text())["metrics"]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("query")


def test_each_questions_texts_are_searched_and_fused_by_reciprocal_rank(root):
    from hydra import compose, initialize_config_dir

    from ragsweep.runner.build import build
    from ragsweep.runner.stages import chunk_dataset

    records, metrics = _run(root, "multi", "query=multi_query", LLAMA, "query.n=2")
    assert metrics["query_failure_rate"] < 1 and metrics["query_texts_mean"] > 1
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        pipeline = build(compose("config", overrides=[*SETTINGS, f"paths.root={root}"]), preflight=False)
    dataset = pipeline.dataset.load()
    chunks, _ = chunk_dataset(pipeline, dataset)
    bm25 = pipeline.retriever.component
    bm25.index(chunks)
    for record in records:
        texts = record["query"]["texts"]
        assert texts[0] == record["question"]
        expected = reciprocal_rank(bm25.search(texts, pipeline.plan.depth), 3) if len(texts) > 1 else \
            bm25.search(texts, 3)[0]
        assert [(hit["doc_id"], hit["start"], hit["end"]) for hit in record["retrieved"]] == [
            (chunks[hit.index].doc_id, chunks[hit.index].start, chunks[hit.index].end) for hit in expected]
    priced, again = _run(root, "again", "query=multi_query", LLAMA, "query.n=2",
                         "prices.models={SmolLM2-135M-Instruct.Q4_1:{input:1000,output:2000}}")
    assert (again["cache_hits_rewrites"], again["cache_misses_rewrites"]) == (4, 0)  # paid for once
    for record in priced:  # a cached rewrite still costs what it took to write: its tokens at SmolLM2's price
        rewrite = record["query"]
        assert rewrite["prompt_tokens"] > 0 and rewrite["latency_ms"] > 0
        assert record["metrics"]["cost_per_question"] == pytest.approx(
            (1000 * rewrite["prompt_tokens"] + 2000 * rewrite["completion_tokens"]) / 1e6)


def test_a_failed_rewrite_searches_with_the_question_is_counted_and_fails_the_run_past_its_budget(root):
    from ragsweep.runner.failures import RewritingFailed

    with pytest.raises(RewritingFailed, match="query rewriting failed for 4 of 4 questions, more than "
                                              "query.max_failure_rate=0.05 allows"):
        _run(root, "over", "query=multi_query", LLAMA, "query.generator.n_ctx=32")
    failed, metrics = _run(root, "failed", "query=multi_query", LLAMA, "query.generator.n_ctx=32",
                           "query.max_failure_rate=1")
    plain, _ = _run(root, "plain", "query=none")
    assert metrics["query_failure_rate"] == 1.0 and all(record["query"]["error"] for record in failed)
    assert [record["retrieved"] for record in failed] == [record["retrieved"] for record in plain]
    assert [record["metrics"] for record in failed] == [record["metrics"] for record in plain]
