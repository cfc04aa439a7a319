"""Ranking metrics equal ranx (itself checked against trec_eval) to 1e-9.

ranx's per-query values are kept in ranx_values.json, beside the inputs' fingerprint and ranx's version: in a fresh
environment ranx's numba compile alone takes over a minute. They are computed by ranx afresh, and the test compares
against those, when the installed ranx is another version or the inputs changed; `RAGSWEEP_PIN_NUMBERS=write`
rewrites the file.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest

from ragsweep.metrics.ranking import RANKING_METRICS

RANX_VALUES = Path(__file__).with_name("ranx_values.json")
CASES = [(k, tied) for tied in (False, True) for k in (1, 3, 5, 10, 20)]

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


def _case(k: int, tied: bool) -> tuple[list, dict, dict]:
    """The queries of one case, as ranx takes them: qrels and run."""
    queries = _random_queries(np.random.default_rng(7 + k + tied), 200, tied)
    qrels = {f"q{i:03d}": {f"d{doc:02d}": 1 for doc in relevant} for i, (relevant, _) in enumerate(queries)}
    run = {f"q{i:03d}": {f"d{doc:02d}": score for doc, score in ranked} for i, (_, ranked) in enumerate(queries)}
    return queries, qrels, run


def _name(k: int, tied: bool) -> str:
    return f"k={k},{'tied' if tied else 'distinct'}"


@pytest.fixture(scope="module")
def ranx_values() -> dict[str, dict]:
    """{case: {"inputs": fingerprint, "values": {metric@k: per-query values}}} as the installed ranx computes them."""
    installed = version("ranx")
    kept = json.loads(RANX_VALUES.read_text()) if RANX_VALUES.is_file() else {}
    inputs = {_name(k, tied): hashlib.sha256(json.dumps(_case(k, tied)[1:], sort_keys=True).encode()).hexdigest()
              for k, tied in CASES}
    writing = os.environ.get("RAGSWEEP_PIN_NUMBERS") == "write"
    if not writing and kept.get("ranx") == installed and kept.get("inputs") == inputs:
        return kept["values"]
    from ranx import Qrels, Run, evaluate

    values = {}
    for k, tied in CASES:
        _, qrels, run = _case(k, tied)
        per_query = evaluate(Qrels(qrels), Run(run), [f"{RANX_NAMES[name]}@{k}" for name in RANKING_METRICS],
                             return_mean=False)
        values[_name(k, tied)] = {metric: [float(value) for value in per_query[metric]] for metric in per_query}
    if writing:
        RANX_VALUES.write_text(json.dumps({"ranx": installed, "inputs": inputs, "values": values}) + "\n")
    return values


@pytest.mark.parametrize(("k", "tied"), CASES, ids=[_name(k, tied) for k, tied in CASES])
def test_equals_ranx(k, tied, ranx_values):
    queries, _, _ = _case(k, tied)
    expected = ranx_values[_name(k, tied)]
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
