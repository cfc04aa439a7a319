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


class IntervalIndex:
    """Finds which of many intervals meet a few others without comparing every pair.

    Sorted by start, an interval can meet [a, b) only if it starts at or before b and if the furthest end
    reached by it or any interval sorted before it is at least a; that furthest end never decreases, so both
    bounds are binary searches and only the intervals between them are compared. On a unit line, where a
    document's intervals stay within its stretch, those are intervals of the same document near [a, b).
    """

    def __init__(self, intervals: np.ndarray) -> None:
        self.intervals = as_intervals(intervals)
        self.order = np.argsort(self.intervals[:, 0], kind="stable")
        self.starts = self.intervals[self.order, 0]
        self.reach = np.maximum.accumulate(self.intervals[self.order, 1]) if len(self.order) else self.starts

    def meeting(self, queries: np.ndarray, touching: bool = False) -> np.ndarray:
        """Ascending indices of the intervals that share a point with any query interval (or, if `touching`,
        a boundary): the rows of `overlap_matrix(intervals, queries, touching).any(axis=1)` that are true."""
        found = [np.empty(0, dtype=np.int64)]
        for start, end in as_intervals(queries).tolist():
            low = np.searchsorted(self.reach, start, side="left")
            high = np.searchsorted(self.starts, end, side="right")
            if low < high:
                rows = self.order[low:high]
                found.append(rows[overlap_matrix(self.intervals[rows], np.array([[start, end]]), touching)[:, 0]])
        return np.unique(np.concatenate(found))
