"""Ranking metrics equal ranx (itself checked against trec_eval) to 1e-9."""

from __future__ import annotations

import numpy as np
import pytest
from ranx import Qrels, Run, evaluate

from ragsweep.metrics.ranking import RANKING_METRICS

RANX_NAMES = {"hit_rate": "hit_rate", "recall": "recall", "precision": "precision", "mrr": "mrr", "ndcg": "ndcg", "map": "map"}


def _random_queries(rng: np.random.Generator, n_queries: int, tied: bool):
    """Queries of at most 15 candidates; with `tied`, scores take few distinct values.

    ranx breaks score ties by insertion order when a query has <= 15 items (numba's quicksort
    sorts runs shorter than SMALL_QUICKSORT + 1 = 16 by stable insertion sort), and our stores break them by index; inserting
    documents in index order makes both orders the same.
    """
    queries = []
    for _ in range(n_queries):
        n_docs = int(rng.integers(1, 16))
        relevant = set(rng.choice(n_docs, size=int(rng.integers(1, n_docs + 1)), replace=False).tolist())
        n_retrieved = int(rng.integers(1, n_docs + 1))
        retrieved = rng.choice(n_docs, size=n_retrieved, replace=False)
        scores = rng.integers(0, 3, size=n_retrieved).astype(float) if tied else rng.random(n_retrieved)
        queries.append((relevant, sorted(zip(retrieved.tolist(), scores.tolist()))))
    return queries


@pytest.mark.parametrize("tied", [False, True], ids=["distinct-scores", "tied-scores"])
@pytest.mark.parametrize("k", [1, 3, 5, 10, 20])
def test_equals_ranx(k, tied):
    rng = np.random.default_rng(7 + k + tied)
    queries = _random_queries(rng, 200, tied)
    qrels = Qrels({f"q{i:03d}": {f"d{doc:02d}": 1 for doc in relevant} for i, (relevant, _) in enumerate(queries)})
    run = Run({f"q{i:03d}": {f"d{doc:02d}": score for doc, score in ranked} for i, (_, ranked) in enumerate(queries)})
    expected = evaluate(qrels, run, [f"{RANX_NAMES[name]}@{k}" for name in RANKING_METRICS], return_mean=False)
    for i, (relevant, ranked) in enumerate(queries):
        order = sorted(ranked, key=lambda pair: (-pair[1], pair[0]))  # score desc, then index
        gains = np.array([float(doc in relevant) for doc, _ in order])
        ideal = np.ones(len(relevant))
        for name, metric in RANKING_METRICS.items():
            assert metric(gains, ideal, k) == pytest.approx(expected[f"{RANX_NAMES[name]}@{k}"][i], abs=1e-9), (name, i)


@pytest.mark.parametrize("name", sorted(RANKING_METRICS))
def test_nothing_retrieved_or_nothing_relevant_scores_zero(name):
    metric = RANKING_METRICS[name]
    assert metric(np.array([]), np.ones(3), 5) == 0.0
    assert metric(np.zeros(4), np.array([]), 5) == 0.0


def test_hand_computed_values():
    # ranks 1..4 relevant = [0, 1, 0, 1], 3 relevant items in the collection, k = 4
    gains, ideal = np.array([0.0, 1.0, 0.0, 1.0]), np.ones(3)
    assert RANKING_METRICS["mrr"](gains, ideal, 4) == 0.5
    assert RANKING_METRICS["precision"](gains, ideal, 4) == 0.5
    assert RANKING_METRICS["recall"](gains, ideal, 4) == pytest.approx(2 / 3)
    assert RANKING_METRICS["map"](gains, ideal, 4) == pytest.approx((1 / 2 + 2 / 4) / 3)
    dcg = 1 / np.log2(3) + 1 / np.log2(5)
    idcg = 1 + 1 / np.log2(3) + 1 / np.log2(4)
    assert RANKING_METRICS["ndcg"](gains, ideal, 4) == pytest.approx(dcg / idcg)
    # k beyond what was retrieved: precision still divides by k (trec_eval P@k)
    assert RANKING_METRICS["precision"](gains, ideal, 10) == 0.2


def test_graded_ndcg():
    # gains 0.5 then 1.0; ideal order 1.0, 0.5, 0.25
    gains, ideal = np.array([0.5, 1.0]), np.array([1.0, 0.5, 0.25])
    expected = (0.5 + 1.0 / np.log2(3)) / (1.0 + 0.5 / np.log2(3))
    assert RANKING_METRICS["ndcg"](gains, ideal, 2) == pytest.approx(expected)
