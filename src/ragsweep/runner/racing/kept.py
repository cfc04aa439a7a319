"""A race's configurations kept alive from one round to the next in the process that runs them.

Launched again through Hydra, each round of each surviving configuration would compose, plan and build it again
and set up a job (copies of its config, its `.hydra/` files, its logging): 0.1 to 0.3 s a configuration a round.
Where a job runs in the racing sweeper's own process (Hydra's basic launcher), its first round leaves its built
pipeline here, and the sweeper hands it each later round directly (its job's logging set up again in its folder);
a configuration the race stops is let go before the next round starts. Jobs that run elsewhere (joblib workers,
Ray nodes, SLURM) are never kept: their rounds are launched again.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsweep.runner.racing.rounds import RaceRound

log = logging.getLogger(__name__)

NextRound = Callable[[RaceRound], Any]  # a round -> the job's race.json (None: it failed)


@dataclass(frozen=True)
class Kept:
    """A configuration kept between rounds: what runs its next round, and its job's folder, where it writes."""

    next_round: NextRound
    folder: Path


class KeptConfigurations:
    """The kept configurations of the race this process is sweeping, by their place in its grid (`slot`)."""

    def __init__(self) -> None:
        self._owner: int | None = None  # the sweeping process; nothing is kept anywhere else
        self._kept: dict[int, Kept] = {}

    def open(self) -> None:
        """A race starts in this process: its jobs that run here are kept from now on."""
        self._kept.clear()
        self._owner = os.getpid()

    def keep(self, slot: int, next_round: NextRound, folder: Path) -> None:
        """Keep the configuration at `slot` after a round, when the race is swept from this very process."""
        if self._owner == os.getpid():
            self._kept[slot] = Kept(next_round, folder)

    def __contains__(self, slot: int) -> bool:
        return slot in self._kept

    def folder(self, slot: int) -> Path:
        """The kept configuration's job folder."""
        return self._kept[slot].folder

    def run(self, slot: int, race: RaceRound) -> Any:
        """The kept configuration's round `race`; None when it failed (then it is no longer kept)."""
        try:
            returned = self._kept[slot].next_round(race)
        except Exception:  # as a launcher records a job that raised: failed, and the race goes on
            log.exception("the race's configuration %d failed in its kept process", slot)
            returned = None
        if returned is None:
            self.keep_only(set(self._kept) - {slot})
        return returned

    def keep_only(self, slots: Collection[int]) -> None:
        """Let go of every configuration not in `slots` (stopped or failed), and of the memory they held."""
        gone = set(self._kept) - set(slots)
        for slot in gone:
            del self._kept[slot]
        if gone:
            gc.unfreeze()  # jobs freeze what they load (`run._freeze_loaded_heap`): free its cycles too
            gc.collect()
            gc.freeze()

    def close(self) -> None:
        """The race ended: nothing is kept."""
        self.keep_only(())
        self._owner = None


KEPT = KeptConfigurations()
