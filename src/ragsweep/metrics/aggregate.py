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
    """`{metric: {"mean", "std", "ci95": [lo, hi], "per_corpus": {corpus: mean}}}`.

    The CI is the percentile bootstrap over queries (resampled with replacement, one shared
    set of resamples for every metric, fixed seed so reruns report identical numbers).
    """
    if not per_query:
        raise ValueError("cannot summarize zero queries")
    rng = np.random.default_rng(seed)
    n = len(per_query)
    resamples = rng.integers(0, n, size=(bootstrap_samples, n))
    # how often each query is drawn in each resample; then every metric's resampled means in one product
    counts = np.zeros((bootstrap_samples, n))
    np.add.at(counts, (np.arange(bootstrap_samples)[:, None], resamples), 1.0)
    names = list(per_query[0])
    values = np.array([[scores[name] for name in names] for scores in per_query], dtype=np.float64)
    means = counts @ values / n
    groups = np.array([corpus or "all" for corpus in corpora], dtype=object)
    corpora_sorted = sorted(set(groups.tolist()))
    summary = {}
    for column, metric in enumerate(names):
        summary[metric] = {
            "mean": float(values[:, column].mean()),
            "std": float(values[:, column].std()),
            "ci95": [float(np.percentile(means[:, column], 2.5)), float(np.percentile(means[:, column], 97.5))],
            "per_corpus": {str(g): float(values[groups == g, column].mean()) for g in corpora_sorted},
        }
    return summary
