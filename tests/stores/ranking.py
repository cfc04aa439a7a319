"""The ranking contract every store and retriever keeps, shared by their contract tests."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragsweep.types import Hit


def assert_ranked(hits: Sequence[Hit], k: int, size: int) -> None:
    """At most `k` hits of distinct items among `size`, best score first, equal scores in index order
    (`stores.base.ranked`), so that every store and retriever breaks ties the same way."""
    assert 1 <= len(hits) <= k
    indices = [hit.index for hit in hits]
    assert all(isinstance(index, int) and 0 <= index < size for index in indices), indices
    assert len(set(indices)) == len(indices), f"an item returned twice: {indices}"
    assert all(isinstance(hit.score, float) and math.isfinite(hit.score) for hit in hits), hits
    for better, worse in zip(hits, hits[1:]):
        tie_in_order = better.score == worse.score and better.index < worse.index
        assert better.score > worse.score or tie_in_order, hits
