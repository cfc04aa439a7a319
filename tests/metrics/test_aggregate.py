from __future__ import annotations

import numpy as np
import pytest

from ragsweep.metrics.aggregate import summarize


def test_mean_population_std_ci_and_per_corpus():
    per_query = [{"m": 1.0}, {"m": 0.0}, {"m": 0.5}, {"m": 0.5}]
    summary = summarize(per_query, ["a", "a", "b", "b"], bootstrap_samples=2000)["m"]
    assert summary["mean"] == 0.5
    assert summary["std"] == pytest.approx(np.sqrt(0.125))  # population std: mean of squared deviations
    lo, hi = summary["ci95"]
    assert 0.0 <= lo < 0.5 < hi <= 1.0
    assert summary["per_corpus"] == {"a": 0.5, "b": 0.5}


def test_bootstrap_is_reproducible():
    per_query = [{"m": float(v)} for v in np.random.default_rng(1).random(50)]
    assert summarize(per_query, [None] * 50) == summarize(per_query, [None] * 50)
