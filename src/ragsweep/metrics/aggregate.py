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
    resamples = rng.integers(0, len(per_query), size=(bootstrap_samples, len(per_query)))
    groups = np.array([corpus or "all" for corpus in corpora], dtype=object)
    summary = {}
    for metric in per_query[0]:
        values = np.array([scores[metric] for scores in per_query], dtype=np.float64)
        means = values[resamples].mean(axis=1)
        summary[metric] = {
            "mean": float(values.mean()),
            "std": float(values.std()),
            "ci95": [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))],
            "per_corpus": {str(g): float(values[groups == g].mean()) for g in sorted(set(groups.tolist()))},
        }
    return summary
