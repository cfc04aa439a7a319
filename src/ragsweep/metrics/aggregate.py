"""From per-query values to the numbers a run reports: mean, population std, bootstrap 95% CI."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

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
    n = len(per_query)
    counts = _resample_counts(n, bootstrap_samples, seed)
    names = list(dict.fromkeys(name for scores in per_query for name in scores))
    values = np.array([[scores.get(name, np.nan) for name in names] for scores in per_query], dtype=np.float64)
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    drawn = counts @ present
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (counts @ filled) / drawn  # a resample that drew none of a metric's queries: NaN
    complete = ~np.isnan(means).any(axis=0)
    bounds = np.percentile(means[:, complete], [2.5, 97.5], axis=0) if complete.any() else np.empty((2, 0))
    intervals = dict(zip(np.flatnonzero(complete).tolist(), bounds.T.tolist(), strict=True))
    corpus_of = np.array([corpus or "all" for corpus in corpora], dtype=object)
    in_corpus = {str(corpus): corpus_of == corpus for corpus in sorted(set(corpus_of.tolist()))}
    summary = {}
    for column, metric in enumerate(names):
        has = present[:, column]
        column_values = values[has, column]
        if column not in intervals:
            resampled = means[:, column][~np.isnan(means[:, column])]
            intervals[column] = [float(np.percentile(resampled, 2.5)), float(np.percentile(resampled, 97.5))]
        summary[metric] = {
            "mean": float(column_values.mean()),
            "std": float(column_values.std()),
            "ci95": [float(bound) for bound in intervals[column]],
            "per_corpus": {corpus: float(values[mask & has, column].mean())
                           for corpus, mask in in_corpus.items() if (mask & has).any()},
            "n": int(has.sum()),
        }
    return summary


@lru_cache(maxsize=8)
def _resample_counts(n: int, bootstrap_samples: int, seed: int) -> np.ndarray:
    """How often each of n queries is drawn in each of the bootstrap's resamples (rows), as float64 for the
    products; fixed by the seed, so computed once per process for a dataset's size (read-only)."""
    resamples = np.random.default_rng(seed).integers(0, n, size=(bootstrap_samples, n))
    rows = np.arange(bootstrap_samples)[:, None] * n
    counts = np.bincount((rows + resamples).ravel(), minlength=bootstrap_samples * n).reshape(bootstrap_samples, n)
    counts = counts.astype(np.float64)
    counts.flags.writeable = False
    return counts


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
