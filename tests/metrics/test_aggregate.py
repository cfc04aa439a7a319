from __future__ import annotations

import numpy as np
import pytest

from ragsweep.metrics.aggregate import paired_bootstrap, summarize


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


def test_paired_bootstrap_of_identical_configs_finds_no_difference():
    values = np.random.default_rng(2).random(100)
    test = paired_bootstrap(values, values.copy())
    assert test == {"difference": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p_value": 1.0}


def test_paired_bootstrap_interval_matches_scipy_and_p_matches_a_paired_t_test():
    from scipy import stats

    rng = np.random.default_rng(3)
    other = rng.random(300)
    best = np.clip(other + rng.normal(0.03, 0.2, 300), 0, 1)
    test = paired_bootstrap(best, other, samples=20_000)
    reference = stats.bootstrap(((best - other),), np.mean, n_resamples=20_000, method="percentile",
                                random_state=np.random.default_rng(4)).confidence_interval
    assert test["difference"] == pytest.approx(np.mean(best - other))
    assert test["ci_low"] == pytest.approx(reference.low, abs=2e-3)
    assert test["ci_high"] == pytest.approx(reference.high, abs=2e-3)
    # for a mean of 300 paired differences the bootstrap null is close to the t distribution
    assert test["p_value"] == pytest.approx(stats.ttest_rel(best, other).pvalue, abs=0.01)


def test_paired_bootstrap_pairs_queries_rather_than_configs():
    """Hard and easy questions shared by both configs cancel out: a small constant gain is certain."""
    other = np.linspace(0, 0.9, 50)
    test = paired_bootstrap(other + 0.05, other)
    assert test["difference"] == pytest.approx(0.05)
    assert test["p_value"] == 0.0 and test["ci_low"] == pytest.approx(0.05)


def test_paired_bootstrap_rejects_unpaired_input():
    with pytest.raises(ValueError, match="paired values"):
        paired_bootstrap(np.ones(3), np.ones(4))


def test_a_metric_missing_for_some_queries_is_averaged_over_those_that_have_it():
    """A failed generation has no answer metric: it must not count as 0 (nor turn the mean into NaN)."""
    per_query = [{"recall": 1.0, "answer_f1": 0.5}, {"recall": 0.0}, {"recall": 1.0, "answer_f1": 1.0}]
    summary = summarize(per_query, [None, None, None], bootstrap_samples=200)
    assert summary["answer_f1"]["mean"] == pytest.approx(0.75) and summary["answer_f1"]["n"] == 2
    assert summary["recall"]["mean"] == pytest.approx(2 / 3) and summary["recall"]["n"] == 3
    low, high = summary["answer_f1"]["ci95"]
    assert 0.5 <= low <= high <= 1.0 and not np.isnan(low)
