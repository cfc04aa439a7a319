"""Lengths of unions and intersections of half-open integer intervals, given as (n, 2) arrays."""

from __future__ import annotations

import numpy as np


def as_intervals(pairs) -> np.ndarray:
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


def union_length(intervals: np.ndarray) -> int:
    """Number of points covered by at least one interval (overlaps counted once)."""
    if len(intervals) == 0:
        return 0
    if len(intervals) < 32:  # a query's few chunks and references: plain Python beats numpy's call overhead
        covered, reach = 0, None
        for start, end in sorted(intervals.tolist()):
            if reach is None or start > reach:
                covered, reach = covered + max(end - start, 0), max(end, start)
            elif end > reach:
                covered, reach = covered + end - reach, end
        return covered
    order = np.argsort(intervals[:, 0], kind="stable")
    starts, ends = intervals[order, 0], intervals[order, 1]
    reach = np.maximum.accumulate(ends)
    previous_reach = np.concatenate(([starts[0]], reach[:-1]))
    return int(np.clip(reach - np.maximum(starts, previous_reach), 0, None).sum())


def intersection_length(a: np.ndarray, b: np.ndarray) -> int:
    """|union(a) ∩ union(b)|, by inclusion-exclusion on union lengths."""
    return union_length(a) + union_length(b) - union_length(np.concatenate((a, b)))


def overlap_matrix(a: np.ndarray, b: np.ndarray, touching: bool = False) -> np.ndarray:
    """(len(a), len(b)) booleans: do the intervals share a point (or, if `touching`, a boundary)?"""
    lo = np.maximum(a[:, None, 0], b[None, :, 0])
    hi = np.minimum(a[:, None, 1], b[None, :, 1])
    return lo <= hi if touching else lo < hi


def pairwise_intersections(a: np.ndarray, b: np.ndarray, touching: bool = False) -> np.ndarray:
    """The intersections of every overlapping (a_i, b_j) pair, as intervals."""
    lo = np.maximum(a[:, None, 0], b[None, :, 0])
    hi = np.minimum(a[:, None, 1], b[None, :, 1])
    keep = lo <= hi if touching else lo < hi
    return np.stack((lo[keep], hi[keep]), axis=1)
