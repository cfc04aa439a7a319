"""The evaluator's defined edge cases: nothing retrieved, no reference, k beyond the chunk count."""

from __future__ import annotations

import pytest

from ragsweep.metrics.evaluate import METRIC_KEYS, SpanEvaluator
from ragsweep.metrics.registry import CONTEXT_SIZE
from ragsweep.metrics.token import TOKEN_METRICS
from ragsweep.types import Chunk, Dataset, Document, Hit, Query, Span

TEXT = "alpha beta gamma delta epsilon zeta eta theta"


def _dataset(*queries: Query) -> Dataset:
    return Dataset("t", {"d": Document("d", TEXT)}, list(queries))


def _chunks() -> list[Chunk]:
    return [Chunk("d", s, e, TEXT[s:e]) for s, e in [(0, 16), (17, 30), (31, 44)]]


def test_nothing_retrieved_scores_zero_but_omega_needs_no_retrieval():
    dataset = _dataset(Query("q", "?", (Span("d", 6, 10),)))
    (scores,) = SpanEvaluator(unit="chars").score(dataset, _chunks(), [[]], k=3)
    assert set(scores) == set(METRIC_KEYS)
    assert all(scores[key] == 0.0 for key in METRIC_KEYS if key not in ("precision_omega", "evidence_located"))
    assert scores["precision_omega"] == pytest.approx(4 / 16)  # "beta" inside the first chunk


def test_query_without_reference_scores_zero_everywhere():
    dataset = _dataset(Query("q", "?", ()))
    (scores,) = SpanEvaluator().score(dataset, _chunks(), [[Hit(0, 0.9)]], k=1)
    assert all(value == 0.0 for name, value in scores.items() if name not in (*CONTEXT_SIZE, "evidence_located"))
    assert scores["evidence_located"] == 1.0  # it cites no evidence, so none is lost
    assert scores["context_passages"] == 1 and scores["context_size"] == 3  # "alpha", " beta", " gamma": cl100k


def test_the_context_passed_on_is_what_the_token_metrics_and_its_size_score():
    dataset = _dataset(Query("q", "?", (Span("d", 6, 10), Span("d", 17, 22))))  # "beta", "delta"
    hits = [[Hit(0, 0.9), Hit(2, 0.5)]]  # (0, 16) holds "beta"; (31, 44) neither
    evaluator = SpanEvaluator(unit="chars")
    (chunks_only,) = evaluator.score(dataset, _chunks(), hits, k=2)
    assert chunks_only["token_recall"] == pytest.approx(4 / 9)
    assert (chunks_only["context_passages"], chunks_only["context_size"]) == (2, 16 + 13)
    # the same hits passed on widened to (0, 30), which holds both references: token metrics move, the rest not
    (widened,) = evaluator.score(dataset, _chunks(), hits, k=2, passages=[[Span("d", 0, 30)]])
    assert widened["token_recall"] == 1.0 and widened["token_precision"] == pytest.approx(9 / 30)
    assert (widened["context_passages"], widened["context_size"]) == (1, 30)
    unchanged = [name for name in METRIC_KEYS if name not in (*TOKEN_METRICS, *CONTEXT_SIZE)]
    assert {name: widened[name] for name in unchanged} == {name: chunks_only[name] for name in unchanged}
    (compat,) = SpanEvaluator(unit="chars", mode="chroma_compat").score(dataset, _chunks(), hits, k=2,
                                                                        passages=[[Span("d", 0, 30)]])
    assert compat["token_recall"] == 1.0 and compat["context_size"] == 30


def test_k_larger_than_the_chunk_count():
    dataset = _dataset(Query("q", "?", (Span("d", 17, 30),)))
    hits = [[Hit(1, 0.9), Hit(0, 0.5), Hit(2, 0.1)]]
    (scores,) = SpanEvaluator(unit="chars").score(dataset, _chunks(), hits, k=10)
    assert scores["hit_rate"] == scores["recall"] == scores["mrr"] == scores["token_recall"] == 1.0
    assert scores["precision"] == pytest.approx(1 / 10)  # divided by k, as trec_eval's P@k
    assert scores["chunk_precision"] == pytest.approx(1 / 3)  # divided by chunks retrieved
    assert scores["token_precision"] == pytest.approx(13 / 42)  # 13 reference chars of 16 + 13 + 13


def test_graded_gain_only_changes_ndcg():
    dataset = _dataset(Query("q", "?", (Span("d", 10, 20),)))  # 6 chars in chunk 0, 3 in chunk 1
    hits = [[Hit(1, 0.9), Hit(0, 0.5)]]
    binary = SpanEvaluator(unit="chars").score(dataset, _chunks(), hits, k=2)[0]
    graded = SpanEvaluator(unit="chars", gain="overlap").score(dataset, _chunks(), hits, k=2)[0]
    assert binary["ndcg"] == pytest.approx(1.0)
    # reference [10,20) = " gamma del": chunk 0 holds 6 of its 10 chars, chunk 1 holds 3 ("del"); ranked gains 0.3, 0.6
    assert graded["ndcg"] == pytest.approx((0.3 + 0.6 / 1.5849625007) / (0.6 + 0.3 / 1.5849625007))
    assert {k: v for k, v in binary.items() if k != "ndcg"} == {k: v for k, v in graded.items() if k != "ndcg"}


def test_answers_are_scored_only_where_there_is_an_answer_and_a_reference():
    """A failed generation (None) and a question without reference answers get no answer metric at all:
    neither may turn into a 0 that reads as a wrong answer."""
    from ragsweep.embedding.minilm import MiniLMEmbedder

    evaluator = SpanEvaluator(answer_embedder=MiniLMEmbedder(progress=False), correctness_weight=0.5)
    scored = evaluator.score_answers(["North Carolina [1]", None, "x", "the Senate"],
                                     [("North Carolina",), ("a",), (), ("The House", "Senate")])
    assert scored[1] == {} and scored[2] == {}
    assert scored[0]["answer_exact_match"] == 1.0 and scored[0]["answer_f1"] == 1.0
    assert scored[0]["answer_similarity"] == pytest.approx(1.0, abs=1e-5)  # the citation is not part of the answer
    assert scored[3]["answer_exact_match"] == 1.0  # the best of its two references
    assert scored[3]["answer_correctness"] == pytest.approx(0.5 * 1.0 + 0.5 * scored[3]["answer_similarity"])
    assert SpanEvaluator().score_answers(["x"], [("x",)]) == [{"answer_exact_match": 1.0, "answer_f1": 1.0}]
