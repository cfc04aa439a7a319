"""Per-question latency: measured after a warm-up call, reported as p50 and p95."""

from __future__ import annotations

import time

import numpy as np

from ragsweep.runner.scoring import latency_metrics, latency_samples
from ragsweep.runner.stages import latency_sample, per_query_ms


def test_the_first_call_pays_the_warm_up_and_is_not_timed():
    calls = []

    def search(position: int) -> None:
        time.sleep(0.3 if not calls else 0.001)  # a model loading on the first call
        calls.append(position)

    milliseconds = per_query_ms(search, [0, 5, 9])
    assert calls == [0, 0, 5, 9]
    assert len(milliseconds) == 3 and milliseconds.max() < 100


def test_the_sample_spreads_over_the_questions_and_percentiles_add_search_and_rerank():
    assert latency_sample(100)[:3] == [0, 5, 10] and latency_sample(100)[-1] == 99 and len(latency_sample(100)) == 20
    assert latency_sample(3) == [0, 1, 2] and latency_sample(0) == []
    search, rerank = np.array([1.0, 2.0, 3.0, 4.0]), np.array([10.0, 10.0, 10.0, 30.0])
    metrics = latency_metrics(latency_samples(search, rerank))
    assert metrics["search_ms_p50"] == 2.5 and metrics["rerank_ms_p50"] == 10.0
    assert metrics["latency_ms_p50"] == 12.5  # percentile of the per-question sums, not a sum of percentiles
    assert metrics["latency_ms_p95"] == np.percentile(search + rerank, 95)
    assert set(latency_metrics(latency_samples(search, np.zeros(0)))) == {"search_ms_p50", "search_ms_p95", "latency_ms_p50",
                                                          "latency_ms_p95"}
