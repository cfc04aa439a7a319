"""From per-query values to the numbers a run reports: mean, population std, bootstrap 95% CI."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def summarize(
    per_query: Sequence[dict[str, float]],
    corpora: Sequence[str | None],
    bootstrap_samples: int = 1000,
    seed: int = 0,
) -> dict[str, dict]:
    """`{metric: {"mean", "std", "ci95": [lo, hi], "per_corpus": {corpus: mean}, "n": queries}}`.

    The CI is the percentile bootstrap over queries (resampled with replacement, one shared
    set of resamples for every metric, fixed seed so reruns report identical numbers). A metric
    missing for some queries (an answer metric where generation failed or no reference answer
    exists) is averaged over the queries that have it, in each resample too; `n` says how many.
    """
    if not per_query:
        raise ValueError("cannot summarize zero queries")
    rng = np.random.default_rng(seed)
    n = len(per_query)
    resamples = rng.integers(0, n, size=(bootstrap_samples, n))
    # how often each query is drawn in each resample; then every metric's resampled means in one product
    rows = np.arange(bootstrap_samples)[:, None] * n
    counts = np.bincount((rows + resamples).ravel(), minlength=bootstrap_samples * n).reshape(bootstrap_samples, n)
    names = list(dict.fromkeys(name for scores in per_query for name in scores))
    values = np.array([[scores.get(name, np.nan) for name in names] for scores in per_query], dtype=np.float64)
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    drawn = counts.astype(np.float64) @ present
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (counts.astype(np.float64) @ filled) / drawn  # a resample that drew none of a metric's queries: NaN
    groups = np.array([corpus or "all" for corpus in corpora], dtype=object)
    corpora_sorted = sorted(set(groups.tolist()))
    summary = {}
    for column, metric in enumerate(names):
        column_values = values[present[:, column], column]
        resampled = means[:, column][~np.isnan(means[:, column])]
        summary[metric] = {
            "mean": float(column_values.mean()),
            "std": float(column_values.std()),
            "ci95": [float(np.percentile(resampled, 2.5)), float(np.percentile(resampled, 97.5))],
            "per_corpus": {str(g): float(values[(groups == g) & present[:, column], column].mean())
                           for g in corpora_sorted if ((groups == g) & present[:, column]).any()},
            "n": int(present[:, column].sum()),
        }
    return summary


def paired_bootstrap(best: np.ndarray, other: np.ndarray, samples: int = 10_000, seed: int = 0) -> dict[str, float]:
    """Is `best` really better than `other` on the same queries? Mean difference, its 95% CI and a p-value.

    The queries are resampled in pairs (both configs keep the same draw), so per-query difficulty
    cancels out. The CI is the percentile interval of the resampled mean differences; the
    two-sided p-value is the share of resampled differences, shifted to mean zero (the null
    hypothesis of no difference), that lie at least as far from zero as the observed one.
    """
    best, other = np.asarray(best, dtype=np.float64), np.asarray(other, dtype=np.float64)
    if best.shape != other.shape or best.ndim != 1 or not len(best):
        raise ValueError(f"paired values need one shape with at least one query, got {best.shape} and {other.shape}")
    differences = best - other
    observed = float(differences.mean())
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(differences), size=(samples, len(differences)))
    resampled = differences[draws].mean(axis=1)
    extreme = np.abs(resampled - observed) >= abs(observed) - 1e-12
    return {"difference": observed,
            "ci_low": float(np.percentile(resampled, 2.5)), "ci_high": float(np.percentile(resampled, 97.5)),
            "p_value": float(extreme.mean())}


def paired_test(first: dict[str, float], second: dict[str, float], samples: int = 10_000) -> dict:
    """`first` against `second` (question id -> a metric) on the questions both have: the paired bootstrap's
    mean difference, 95% CI and p-value, how many questions, and a verdict ('better' when p < 0.05 and the
    difference is positive, 'worse' when negative, else 'not distinguishable')."""
    shared = sorted(set(first) & set(second))
    if not shared:
        return {"queries": 0, "verdict": "no question in common"}
    test = paired_bootstrap(np.array([first[q] for q in shared]), np.array([second[q] for q in shared]), samples)
    verdict = ("not distinguishable" if test["p_value"] >= 0.05 or test["difference"] == 0
               else "better" if test["difference"] > 0 else "worse")
    return {"queries": len(shared), **test, "verdict": verdict}
