"""Configurations a race keeps in the sweeping process between rounds (runner.racing.kept)."""

from __future__ import annotations

import gc
import logging
import weakref
from pathlib import Path

from ragsweep.runner.racing.kept import KeptConfigurations
from ragsweep.runner.racing.rounds import RaceRound

FOLDER = Path("outputs/multirun/0")
SECOND = RaceRound(seed=0, round=1, schedule=(), min_questions=10, metric="recall", slot=1)


class Pipeline:
    """Stands for a kept configuration's built pipeline: what letting it go must free."""

    def __init__(self) -> None:
        self.me = self  # a cycle, which only the collector frees


def test_a_kept_configuration_runs_its_next_rounds_until_it_is_let_go():
    kept = KeptConfigurations()
    kept.keep(0, lambda race: {"round": race.round}, FOLDER)
    assert 0 not in kept  # nothing is kept before a race opens in this process
    kept.open()
    pipelines = [Pipeline(), Pipeline()]
    held = [weakref.ref(pipeline) for pipeline in pipelines]
    for slot, pipeline in enumerate(pipelines):
        kept.keep(slot, lambda race, pipeline=pipeline: {"round": race.round, "id": id(pipeline)}, FOLDER / str(slot))
    del pipelines, pipeline
    gc.freeze()  # as a job leaves what it loaded
    assert kept.run(1, SECOND) == {"round": 1, "id": id(held[1]())}
    kept.keep_only({1})  # slot 0 stopped
    assert 0 not in kept and 1 in kept and kept.folder(1) == FOLDER / "1"
    assert held[0]() is None and held[1]() is not None
    kept.close()
    assert 1 not in kept and held[1]() is None


def test_a_round_that_fails_or_raises_lets_its_configuration_go(caplog):
    kept = KeptConfigurations()
    kept.open()

    def broken(race):
        raise RuntimeError("the model went away")

    kept.keep(0, broken, FOLDER)
    kept.keep(1, lambda race: None, FOLDER)
    kept.keep(2, lambda race: {"round": race.round}, FOLDER)
    with caplog.at_level(logging.ERROR):
        assert kept.run(0, SECOND) is None
    assert "the race's configuration 0 failed" in caplog.text and "the model went away" in caplog.text
    assert kept.run(1, SECOND) is None
    assert 0 not in kept and 1 not in kept and 2 in kept
