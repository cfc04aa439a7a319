"""The metric registry: one direction per metric, read by ranking and the gate."""

from __future__ import annotations

import pandas as pd
import pytest

from ragsweep.metrics import registry
from ragsweep.results.best import RANKABLE, RECORDED
from ragsweep.results.gate import gate_table
from ragsweep.results.gate_rows import MaxDrop
from ragsweep.tracking.runs import ranked


def test_costs_latency_and_error_rates_are_lower_is_better_and_not_ranked_by():
    for name in ("latency_ms_p95", "completion_tokens_mean", "generation_error_rate", "judge_failure_rate"):
        assert registry.metric(name).direction == "minimize" and name not in RANKABLE
    assert {"token_iou", "ndcg", "answer_f1", "faithfulness", "context_relevance"} <= set(RANKABLE)
    assert "latency_ms_p50" not in RECORDED and "answer_f1" in RECORDED  # timings differ between identical runs


def test_a_run_level_metric_has_no_per_question_values():
    assert not registry.metric("faithfulness_micro").per_question and registry.metric("faithfulness").per_question
    assert not registry.metric("latency_ms_p95").per_question


def test_an_unknown_metric_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown metric 'tokn_iou'; metrics: token_recall"):
        registry.metric("tokn_iou")


def test_ranking_follows_the_direction():
    runs = pd.DataFrame({"name": ["a", "b", "c"], "token_iou": [0.2, 0.5, 0.1], "latency_ms_p95": [30.0, 10.0, 20.0]})
    assert list(ranked(runs, "token_iou")["name"]) == ["b", "a", "c"]
    assert list(ranked(runs, "latency_ms_p95")["name"]) == ["b", "c", "a"]


def test_the_gate_reads_worse_in_the_metrics_own_direction():
    drop = MaxDrop(0.2, relative=True)
    assert drop.allows(100.0, 119.0, registry.metric("completion_tokens_mean"))
    assert not drop.allows(100.0, 121.0, registry.metric("completion_tokens_mean"))
    assert drop.allows(0.5, 0.9, registry.metric("answer_f1")) and not drop.allows(0.5, 0.39, registry.metric("answer_f1"))
    baseline = {str(q): {"answer_f1": 0.5, "completion_tokens_mean": 10.0} for q in range(20)}
    now = {str(q): {"answer_f1": 0.5, "completion_tokens_mean": 20.0} for q in range(20)}
    table = gate_table({"answer_f1": 0.5, "completion_tokens_mean": 10.0},
                       {"answer_f1": 0.5, "completion_tokens_mean": 20.0}, baseline, now,
                       ["answer_f1", "completion_tokens_mean"], drop, 0.05, samples=200).set_index("metric")
    assert table.loc["answer_f1", "ok"]
    assert table.loc["completion_tokens_mean", "verdict"].startswith("FAIL: rose more than 20%")


def test_the_registry_declares_derived_and_work_names_and_nothing_else():
    assert registry.declares("token_iou") and registry.declares(registry.std_name("token_iou"))
    assert all(registry.declares(end) for end in registry.interval_names("faithfulness_corrected"))
    assert registry.declares("seconds_embedding") and registry.declares("cache_misses_verdicts")
    assert registry.declares("n_chunks") and registry.declares("dataset_documents")
    assert not registry.declares("latency_ms_p95_std")  # one value per run: no spread across questions
    assert not registry.declares("token_iou_low")  # only a corrected estimate has an interval
    assert not registry.declares("tokn_iou")


def test_summary_columns_and_the_metrics_a_whole_retriever_cannot_score_come_from_the_registry():
    assert registry.summary_columns("retrieval") == ("token_recall", "token_precision", "token_iou",
                                                     "precision_omega", "recall", "mrr", "ndcg")
    assert registry.summary_columns("generation")[-2:] == ("generation_error_rate", "latency_ms_p50")
    assert registry.summary_columns("judged")[-1] == "judge_failure_rate"
    assert registry.names(whole_chunking=True) == ("precision_omega", "recall", "ndcg", "map")
    assert registry.DEFAULT_RANKING in registry.names(headline=True)
