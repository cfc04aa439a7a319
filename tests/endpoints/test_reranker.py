"""reranker=endpoint against a real rerank server, Infinity, serving the cross-encoder reranker=cross_encoder runs in
process (MiniLM with an untrained head: the scores mean nothing, but both sides must give the same ones)."""

from __future__ import annotations

import pytest

from ragsweep.rerank.cross_encoder import CrossEncoderReranker
from ragsweep.rerank.endpoint import EndpointReranker
from ragsweep.types import Chunk, Hit
from tests.endpoints.test_embedder import RETRIEVAL, _command, _dataset, _sweep
from tests.servers import SCORER, free_port

pytestmark = pytest.mark.slow
TEXTS = ["Bananas are yellow fruit.", "The senate passed the budget bill.", "Volcanoes erupt molten rock.",
         "Congress debated the deficit for a week.", "Ripe mangoes taste sweet.", "Lava cooled into basalt."]
CHUNKS = [Chunk("d", i, i + 1, text) for i, text in enumerate(TEXTS)]
QUESTIONS = ["What did lawmakers approve?", "Which fruit is yellow?", "What comes out of a volcano?"]


def test_rankings_from_the_server_are_the_in_process_cross_encoders(infinity, cross_encoder):
    hits = [[Hit(i, 1.0 - i / 10) for i in range(len(TEXTS))][start:] for start in range(len(QUESTIONS))]
    endpoint = EndpointReranker(infinity.base_url, SCORER, candidates=len(TEXTS), concurrency=2)
    endpoint.preflight()
    served = endpoint.rerank(QUESTIONS, CHUNKS, hits)
    local = CrossEncoderReranker(cross_encoder, candidates=len(TEXTS)).rerank(QUESTIONS, CHUNKS, hits)
    assert [[hit.index for hit in ranked] for ranked in served] == [[hit.index for hit in ranked] for ranked in local]
    assert [hit.score for ranked in served for hit in ranked] == pytest.approx(
        [hit.score for ranked in local for hit in ranked], abs=1e-4)
    assert [sorted(hit.index for hit in ranked) for ranked in served] == [list(range(s, 6)) for s in range(3)]


def test_a_server_that_is_not_there_or_a_model_it_lacks_is_named_before_work(infinity):
    gone = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ValueError, match=f"reranker.base_url={gone} with reranker.model={SCORER} and "
                                         "reranker.schema=cohere does not rerank"):
        EndpointReranker(gone, SCORER).preflight()
    with pytest.raises(ValueError, match="reranker.model=no-such-model .* does not rerank"):
        EndpointReranker(infinity.base_url, "no-such-model").preflight()
    with pytest.raises(RuntimeError, match=f"reranker.base_url={gone}: reranking failed after 0 retries"):
        EndpointReranker(gone, SCORER, max_retries=0, timeout=5).rerank(["q"], CHUNKS, [[Hit(0, 1.0)]])


def test_an_unknown_schema_is_refused_when_built():
    with pytest.raises(ValueError, match="reranker.schema=jina is not one of cohere, tei"):
        EndpointReranker("http://127.0.0.1:9", "m", schema="jina")


def test_a_sweep_reranking_at_the_server_scores_as_in_process_and_reranks_once(infinity, cross_encoder, tmp_path):
    data = _dataset(tmp_path)
    common = ("k=3", "reranker.candidates=6", "dataset=native", f"dataset.path={data}")
    local = _sweep(tmp_path / "local", "reranker=cross_encoder", f"reranker.model={cross_encoder}", *common)
    endpoint = ("reranker=endpoint", f"reranker.base_url={infinity.base_url}", f"reranker.model={SCORER}",
                f"+prices.models.{SCORER}.input=1")
    before = infinity.answered("/rerank")
    estimate = _command(tmp_path / "served", "ragsweep", "estimate", *endpoint, *common).stdout
    assert infinity.answered("/rerank") - before == 1  # priced from the chunks: only the preflight's probe
    questions = len(data.joinpath("queries.jsonl").read_text().splitlines())
    assert "reranks" in estimate.splitlines()[0] and f"{questions} (0 cached)" in estimate
    before = infinity.answered("/rerank")
    served = _sweep(tmp_path / "served", *endpoint, *common)
    for name in RETRIEVAL:
        assert served[f"metrics.{name}"] == pytest.approx(local[f"metrics.{name}"], abs=5e-5), name
    asked = infinity.answered("/rerank") - before
    assert asked == 1 + questions  # the probe, one request a question
    _sweep(tmp_path / "served", *endpoint, *common, "+force=true")
    assert infinity.answered("/rerank") - before - asked == 1  # the probe: the rankings are cached
    assert served["metrics.cost_total"] > 0 and local["metrics.cost_total"] == 0
