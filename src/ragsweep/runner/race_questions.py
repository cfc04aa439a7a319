"""Which questions one round of a race runs: the first n of one seeded order, cut into the race's shards.

`hydra/sweeper=racing` sets `race` on each job it launches (never by hand): the order's seed, the round,
the schedule of shares and the metric raced on. Every configuration takes the questions in the same
order, so their per-question scores pair by question. The first stage and the reranker are cached per
shard (the questions a round adds), so continuing a configuration computes only its new questions; answers
and verdicts are cached per prompt and pair already.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragsweep.runner.race import round_sizes
from ragsweep.types import Dataset

RACE_KEY = "race"  # the job's top-level setting the racing sweeper fills in


@dataclass(frozen=True)
class RaceRound:
    """One job's place in a race, from its `race` setting."""

    seed: int
    round: int  # 0-based index into `schedule`
    schedule: tuple[float, ...]  # share of the questions run after each round, ending at 1.0
    min_questions: int
    metric: str

    @classmethod
    def from_setting(cls, setting: Mapping[str, Any]) -> RaceRound:
        return cls(int(setting["seed"]), int(setting["round"]), tuple(float(s) for s in setting["schedule"]),
                   int(setting.get("min_questions", 1)), str(setting["metric"]))

    def sizes(self, total: int) -> list[int]:
        """Questions run after each round of the schedule (see `round_sizes`)."""
        return round_sizes(self.schedule, total, self.min_questions)

    def questions(self, total: int) -> int:
        """Questions this round runs: its size, or every question when the schedule has fewer rounds left."""
        sizes = self.sizes(total)
        return sizes[min(self.round, len(sizes) - 1)]

    def shards(self, total: int) -> list[tuple[int, int]]:
        """The slices of the seeded order this round's questions fall into, one per round so far."""
        ends = [size for size in self.sizes(total) if size <= self.questions(total)]
        return list(zip([0, *ends[:-1]], ends, strict=True))


def seeded_order(count: int, seed: int) -> list[int]:
    """The race's order of the dataset's questions: a permutation by numpy's PCG64 generator from `seed`."""
    return np.random.default_rng(seed).permutation(count).tolist()


def race_dataset(dataset: Dataset, race: RaceRound) -> Dataset:
    """The dataset with only this round's questions, in the race's order (its own fingerprint: what was scored;
    the job chunks, tags and identifies the configuration by the whole dataset)."""
    order = seeded_order(len(dataset.queries), race.seed)[: race.questions(len(dataset.queries))]
    return Dataset(dataset.name, dataset.documents, [dataset.queries[i] for i in order], dict(dataset.loading))
