"""Which of a dataset's questions a run asks (`dataset.limit`, `dataset.sample`, `dataset.seed`), shared by
every loader so a subset is drawn the same way whatever the data's format.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragsweep.data.base import DatasetError
from ragsweep.types import Dataset, Query


@dataclass(frozen=True)
class QuestionChoice:
    """Which of a dataset's questions a run asks: all, the first `limit`, or `sample` drawn with `seed`,
    stratified by corpus (each corpus keeps its share, at least one question). Every document stays. The
    dataset's fingerprint is of the questions kept, so a subset is its own dataset to the cache and to runs."""

    limit: int | None = None
    sample: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        for key in ("limit", "sample"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise DatasetError(f"dataset.{key} must be a positive integer or null, got {value!r}")
        if self.limit is not None and self.sample is not None:
            raise DatasetError("dataset.limit and dataset.sample both set; keep one (limit takes the first N "
                               "questions, sample draws N with dataset.seed)")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise DatasetError(f"dataset.seed must be an integer, got {self.seed!r}")

    def apply(self, dataset: Dataset) -> Dataset:
        wanted = self.limit if self.limit is not None else self.sample
        queries = dataset.queries
        if wanted is None or wanted >= len(queries):
            return dataset
        if self.limit is not None:
            kept = queries[:wanted]
        else:
            kept = [queries[i] for i in sorted(_stratified(queries, wanted, self.seed))]
        loading = {**dataset.loading, "questions_left_out": len(queries) - len(kept)}
        return Dataset(dataset.name, dataset.documents, kept, loading, repairs=dataset.repairs)


def _stratified(queries: list[Query], wanted: int, seed: int) -> list[int]:
    """Positions of `wanted` questions drawn without replacement, each corpus's share by largest remainder
    (at least one per corpus while `wanted` allows)."""
    groups: dict[str | None, list[int]] = {}
    for position, query in enumerate(queries):
        groups.setdefault(query.corpus, []).append(position)
    exact = {corpus: wanted * len(members) / len(queries) for corpus, members in groups.items()}
    shares = {corpus: min(len(groups[corpus]), max(1, int(share))) for corpus, share in exact.items()}
    for corpus in sorted(groups, key=lambda c: exact[c] - int(exact[c]), reverse=True):
        if sum(shares.values()) >= wanted:
            break
        if shares[corpus] < len(groups[corpus]):
            shares[corpus] += 1
    while sum(shares.values()) > wanted:  # the at-least-one rule overshot: trim the largest
        shares[max(shares, key=shares.get)] -= 1
    rng = np.random.default_rng(seed)
    return [int(i) for corpus, members in groups.items()
            for i in rng.choice(members, size=shares[corpus], replace=False)]
