"""A class's raised `version` (`ragsweep.contract.VERSION`) reaches the stage cache: its stage and every stage after
it are computed again, the stages before it are read from the cache, in a real run of the configuration."""

from __future__ import annotations

import mlflow
import pytest

from ragsweep import Evaluation
from ragsweep.chunking.recursive import RecursiveChunker
from ragsweep.rerank.embedding import EmbeddingReranker

STAGES = ("chunks", "retrieval", "rerank")


def _cache_counts(evaluation: Evaluation, result) -> dict[str, str]:
    """Per stage, whether the run read it from the cache (`hit`) or computed it (`miss`)."""
    metrics = mlflow.MlflowClient(f"sqlite:///{evaluation.project / 'mlruns' / 'mlflow.db'}").get_run(
        result.run_id).data.metrics
    return {stage: "miss" if metrics.get(f"cache_misses_{stage}", 0) else "hit" for stage in STAGES}


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory) -> Evaluation:
    return Evaluation(project=tmp_path_factory.mktemp("versions"), overrides=[
        "dataset.limit=6", "retriever=bm25", "reranker=embedding", "reranker.candidates=10", "k=3",
        "tracking.trace_queries=0"])


def test_a_raised_version_recomputes_its_stage_and_the_stages_after_it(evaluation, monkeypatch):
    first = evaluation.run()
    assert _cache_counts(evaluation, first) == dict.fromkeys(STAGES, "miss")
    again = evaluation.run()
    assert _cache_counts(evaluation, again) == dict.fromkeys(STAGES, "hit")
    monkeypatch.setattr(EmbeddingReranker, "version", "2", raising=False)
    reranker_raised = evaluation.run()
    assert _cache_counts(evaluation, reranker_raised) == {"chunks": "hit", "retrieval": "hit", "rerank": "miss"}
    assert reranker_raised.fingerprint != first.fingerprint  # and the run is another configuration's
    monkeypatch.setattr(RecursiveChunker, "version", "2", raising=False)
    chunker_raised = evaluation.run()
    assert _cache_counts(evaluation, chunker_raised) == dict.fromkeys(STAGES, "miss")
    assert chunker_raised.metrics["token_iou"].mean == pytest.approx(first.metrics["token_iou"].mean)
