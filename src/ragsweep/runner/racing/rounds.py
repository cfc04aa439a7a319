"""Which questions one round of a race runs: the first n of one seeded order, cut into the race's shards.

`hydra/sweeper=racing` sets `race` on each job it launches (never by hand): the order's seed, the round,
the schedule of shares and the metric raced on. Every configuration takes the questions in the same
order, so their per-question scores pair by question. The first stage and the reranker are cached per
shard (the questions a round adds), so continuing a configuration computes only its new questions; answers
and verdicts are cached per prompt and pair already.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ragsweep import per_query
from ragsweep.runner.racing.schedule import growing_sizes, round_sizes
from ragsweep.types import Dataset

RACE_KEY = "race"  # the job's top-level setting the racing sweeper fills in
RACE_FILE = "race.json"  # a race job's per-question scores on the raced metric, read by the racing sweeper
T = TypeVar("T")


@dataclass(frozen=True)
class RaceRound:
    """One job's place in a race, from its `race` setting."""

    seed: int
    round: int  # 0-based index into `schedule`
    schedule: tuple[float, ...]  # share of the questions run after each round, ending at 1.0; () grows them
    min_questions: int
    metric: str
    first: int = 1  # the first round's questions when the rounds grow (`schedule.growing_sizes`)
    run: str | None = None  # the configuration's run, left open by its previous round of this race
    slot: int | None = None  # the configuration's place in the race's grid, under which its process keeps it

    @classmethod
    def from_setting(cls, setting: Mapping[str, Any]) -> RaceRound:
        minimum = int(setting.get("min_questions", 1))
        slot = setting.get("slot")
        return cls(int(setting["seed"]), int(setting["round"]), tuple(float(s) for s in setting["schedule"]),
                   minimum, str(setting["metric"]), int(setting.get("first", minimum)),
                   str(setting["run"]) if setting.get("run") else None, None if slot is None else int(slot))

    def setting(self) -> dict[str, Any]:
        """The `race` setting that gives this round (`from_setting` reads it back)."""
        return {"seed": self.seed, "round": self.round, "schedule": list(self.schedule), "first": self.first,
                "min_questions": self.min_questions, "metric": self.metric,
                **({"slot": self.slot} if self.slot is not None else {}), **({"run": self.run} if self.run else {})}

    def order(self, total: int) -> list[int]:
        """The race's order of the dataset's `total` questions (see `seeded_order`)."""
        return seeded_order(total, self.seed)

    def sizes(self, total: int) -> list[int]:
        """Questions run after each round (see `round_sizes` and `growing_sizes`)."""
        if self.schedule:
            return round_sizes(self.schedule, total, self.min_questions)
        return growing_sizes(self.first, total)

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
    order = race.order(len(dataset.queries))[: race.questions(len(dataset.queries))]
    return Dataset(dataset.name, dataset.documents, [dataset.queries[i] for i in order], dict(dataset.loading),
                   same_documents_as=dataset)


def in_dataset_order(order: Sequence[int], items: Sequence[T]) -> list[T]:
    """Items listed in the race's `order` (item j belongs to question order[j]), put back in the dataset's."""
    placed: list = [None] * len(order)
    for position, item in zip(order, items, strict=True):
        placed[position] = item
    return placed


def write_race_scores(output_dir: Path, run_id: str, race: RaceRound, whole: Dataset, held_open: bool) -> None:
    """race.json: the run (`open` while the round left it RUNNING for the next), how many questions the dataset
    has, and the raced metric of each of the round's questions in the race's order (null where the question
    failed: no answer, or its judging failed), read from the job's per_query.jsonl (in the race's order, or the
    dataset's after the last round)."""
    values = {}
    for record in per_query.records(per_query.find(output_dir)):
        value = record["metrics"].get(race.metric)
        values[record["id"]] = None if value is None or value != value else float(value)
    total = len(whole.queries)
    ids = [whole.queries[i].id for i in race.order(total)[: race.questions(total)]]
    (output_dir / RACE_FILE).write_text(json.dumps(
        {"run_id": run_id, "open": held_open, "total": total, "questions": len(ids), "metric": race.metric, "ids": ids,
         "values": [values[question] for question in ids]}))
