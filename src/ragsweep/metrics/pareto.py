"""The Pareto front: the configurations no other beats on every metric at once.

One function, used by `best --pareto`, the report's chart and the tags a multi-objective sweep leaves on its
runs, so the three never disagree about which configurations are on the front.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragsweep.metrics.registry import Direction


def non_dominated(values: np.ndarray, directions: Sequence[Direction]) -> np.ndarray:
    """True for each row of `values` (points x metrics) that no other row dominates.

    Row b dominates row a when b is at least as good as a on every metric and strictly better on one, each in
    its direction (Pareto optimality; Deb, "Multi-objective optimization using evolutionary algorithms", 2001,
    Definition 2.5): with s_j = +1 for "maximize" and -1 for "minimize", b dominates a iff
    s_j b_j >= s_j a_j for all j and s_j b_j > s_j a_j for some j. Equal rows never dominate each other, so
    duplicates are on the front together or off it together. O(n² m) time and memory, fine for the hundreds of
    configurations a sweep holds.

    Raises:
        ValueError: a direction that is not "maximize" or "minimize", a shape that does not match the
            directions, or a NaN (a run without the metric: leave it out before asking).
    """
    points = np.asarray(values, dtype=float)
    if points.ndim != 2 or points.shape[1] != len(directions):
        raise ValueError(f"values must be points x {len(directions)} metrics, got shape {points.shape}")
    if np.isnan(points).any():
        raise ValueError("values hold a NaN: leave out the points without every metric first")
    unknown = [d for d in directions if d not in ("maximize", "minimize")]
    if unknown:
        raise ValueError(f"directions must be 'maximize' or 'minimize', got {unknown}")
    better = points * np.array([1.0 if d == "maximize" else -1.0 for d in directions])  # higher is better
    at_least = (better[None, :, :] >= better[:, None, :]).all(axis=2)  # [a, b]: b at least as good as a
    strictly = (better[None, :, :] > better[:, None, :]).any(axis=2)
    return ~(at_least & strictly).any(axis=1)
