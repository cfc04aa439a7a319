"""The race over a grid (runner.racing.sweep): who is stopped, what each round launches, what is refused."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ragsweep.runner.errors import ConfigError
from ragsweep.runner.racing.sweep import RacingSettings, RoundJob, configuration_labels, race_override, run_race

N = 400


class FakeLaunch:
    """Jobs that return fixed per-question values (in the race's order), as a racing job's race.json would."""

    def __init__(self, means: dict[str, float], settings: RacingSettings, fail: dict[str, int] | None = None):
        rng = np.random.default_rng(7)
        difficulty = rng.normal(size=N)
        self.values = {name: (rng.normal(size=N) * 0.5 + difficulty + 4 * (mean - 0.5) > 0).astype(float)
                       for name, mean in means.items()}
        self.settings, self.fail = settings, fail or {}
        self.batches: list[list[str]] = []
        self.questions: dict[str, int] = {}
        self.slots: dict[str, int] = {}  # each configuration keeps its place in the grid from round to round

    def __call__(self, batch: list[RoundJob]) -> list[dict | None]:
        self.batches.append([",".join(job.point) for job in batch])
        self.configurations = len(self.batches[0])
        returned = []
        for job in batch:
            name, round_index = ",".join(job.point), job.race.round
            assert job.overrides[:-1] == list(job.point) and job.race.slot == self.slots.setdefault(name, job.slot)
            n = self.settings.sizes(N, len(batch) if round_index == 0 else self.configurations)[round_index]
            if self.fail.get(name) == round_index:
                returned.append(None)
                continue
            self.questions[name] = n
            values = [None if i % 37 == 0 else float(v) for i, v in enumerate(self.values[name][:n])]
            returned.append({"run_id": f"run-{name}", "total": N, "questions": n, "metric": "recall",
                             "ids": [f"q{i}" for i in range(n)], "values": values})
        return returned


def test_a_clearly_worse_configuration_stops_early_and_the_winner_runs_every_question():
    settings = RacingSettings("recall")
    launch = FakeLaunch({"k=10": 0.8, "k=5": 0.78, "k=1": 0.2}, settings)
    record = run_race([["k=10"], ["k=5"], ["k=1"]], settings, launch)
    assert record.winner == "k=10" and launch.questions["k=10"] == N
    assert "k=1" in record.stopped and record.stopped["k=1"]["questions"] < N
    stop = record.stopped["k=1"]
    assert stop["high"] < 0 and stop["leader"] in {"k=10", "k=5"} and stop["left_out"] > 0  # failures counted
    assert record.evaluations < 3 * N
    assert "k=1" not in launch.batches[-1]


def test_each_round_says_who_goes_on_and_the_work_the_stopped_save(caplog):
    settings = RacingSettings("recall")
    launch = FakeLaunch({"k=10": 0.8, "k=5": 0.78, "k=1": 0.2}, settings)
    with caplog.at_level("INFO", logger="ragsweep.runner.racing.sweep"):
        record = run_race([["k=10"], ["k=5"], ["k=1"]], settings, launch)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("race round")]
    assert len(lines) == len(record.rounds)
    stopped_in = record.stopped["k=1"]["round"]
    saved = N - record.questions["k=1"]
    assert lines[stopped_in - 1] == (
        f"race round {stopped_in} of at most {len(settings.sizes(N, 3))}: {record.rounds[stopped_in - 1]['questions']} of {N} questions; "
        f"2 of 3 configurations go on: {'; '.join(record.rounds[stopped_in - 1]['survivors'])}; 1 stopped, 0 failed; "
        f"the stopped save {saved} of the full grid's {3 * N} evaluations ({saved / (3 * N):.0%})")
    assert lines[0].endswith("the stopped save 0 of the full grid's 1200 evaluations (0%)") or stopped_in == 1


def test_a_lone_survivor_goes_straight_to_the_last_round():
    settings = RacingSettings("recall", min_questions=40)
    launch = FakeLaunch({"a=1": 0.9, "a=2": 0.1}, settings)
    record = run_race([["a=1"], ["a=2"]], settings, launch)
    assert record.stopped["a=2"]["round"] == 1
    assert [r["questions"] for r in record.rounds] == [40, N]  # rounds 2 and 3 skipped
    assert record.winner == "a=1"


def test_a_configuration_whose_job_fails_is_withdrawn_and_said():
    settings = RacingSettings("recall")
    launch = FakeLaunch({"k=10": 0.8, "k=5": 0.78, "k=1": 0.75}, settings, fail={"k=5": 1})
    record = run_race([["k=10"], ["k=5"], ["k=1"]], settings, launch)
    assert record.failed == {"k=5": "its job failed in round 2"}
    assert all("k=5" not in batch for batch in launch.batches[2:])
    assert record.winner in {"k=10", "k=1"} and launch.questions[record.winner] == N


def test_no_winner_when_every_job_fails():
    settings = RacingSettings("recall")
    launch = FakeLaunch({"a=1": 0.5, "a=2": 0.5}, settings, fail={"a=1": 0, "a=2": 0})
    assert run_race([["a=1"], ["a=2"]], settings, launch).winner is None


def test_labels_are_the_jobs_names():
    grid = [["k=1", "experiment=x", "+chunker.size=100"], ["k=3", "experiment=x", "+chunker.size=100"]]
    assert configuration_labels(grid, ["experiment"]) == ["+chunker.size=100,k=1", "+chunker.size=100,k=3"]


@pytest.mark.parametrize("racing, optimized, message", [
    ({}, None, "needs a metric to race on"),
    ({"metric": "latency_ms_p95"}, None, "a race compares per-question values with known bounds"),
    ({"metric": "faithfulness_micro"}, None, "run-level"),
    ({"metric": "no_such"}, None, "unknown metric"),
    ({"metric": "recall", "delta": 1.5}, None, "must be in (0, 1)"),
    ({"metric": "recall", "delta": 0}, None, "must be in (0, 1)"),
    ({"schedule": [0.25, 0.5]}, "recall", "must end at 1.0"),
    ({"schedule": [0.5, 0.25, 1.0]}, "recall", "increasing"),
    ({"metric": "recall", "min_questions": 0}, None, "min_questions=0"),
])
def test_bad_racing_settings_are_refused_in_one_line(racing, optimized, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as error:
        RacingSettings.from_config(racing, optimized)
    assert "\n" not in str(error.value)


def test_the_job_override_round_trips():
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    from ragsweep.runner.racing.rounds import RaceRound

    def parsed(override: str) -> RaceRound:
        return RaceRound.from_setting(OmegaConf.create(OverridesParser.create().parse_overrides([override])[0].value()))

    settings = RacingSettings("ndcg", schedule=(0.2, 1.0), min_questions=5, seed=3)
    override = race_override(settings.race_round(1, configurations=4, slot=2))
    assert override.startswith("+race={")
    race = parsed(override)
    assert (race.seed, race.round, race.schedule, race.min_questions, race.metric, race.slot) == \
        (3, 1, (0.2, 1.0), 5, "ndcg", 2)
    assert race.questions(100) == 100 and race.shards(100) == [(0, 20), (20, 100)]
    grown = parsed(race_override(RacingSettings("ndcg", min_questions=5).race_round(2, configurations=36, slot=0)))
    assert grown.first == 12 and grown.sizes(40) == [12, 18, 27, 40] and grown.questions(40) == 27
    assert grown.run is None and race.run is None and grown.slot == 0
    run_id = "1e50" + "0" * 28  # a hex id that reads as a number unquoted
    held = parsed(race_override(settings.race_round(2, configurations=4, slot=3, run=run_id)))
    assert held == settings.race_round(2, configurations=4, slot=3, run=run_id) and held.run == run_id
    assert RaceRound.from_setting(held.setting()) == held and parsed(race_override(race)) == race


def test_a_schedule_left_to_the_question_set_grows_by_half_from_a_tenth_of_the_questions():
    settings = RacingSettings("recall")
    assert settings.sizes(68, 9) == [10, 15, 23, 35, 53, 68]  # 6 rounds where every 10% took 10
    assert settings.sizes(472, 36) == [48, 72, 108, 162, 243, 365, 472]
    assert settings.sizes(10_000, 36) == [1000, 1500, 2250, 3375, 5063, 7595, 10_000]  # 7 rounds at most
    assert settings.sizes(25, 2) == [10, 15, 25]  # the last round adds at least half what the one before it did
    assert settings.sizes(8, 2) == [8]
    assert RacingSettings("recall", min_questions=1).sizes(40, 2)[0] == 6  # no sooner can any stop, at delta 0.05
    assert RacingSettings("recall", min_questions=1).sizes(40, 36)[0] == 12  # more pairs, a lower alpha each
    assert RacingSettings("recall", schedule=(0.5, 1.0)).sizes(68, 9) == [34, 68]  # given shares are kept


def test_the_sweepers_defaults_are_the_races():
    """`hydra.sweeper.racing` (what `--cfg hydra` shows) and `RacingSettings` give the same defaults."""
    from hydra_plugins.ragsweep_racing.racing_sweeper import RacingConf

    shown, used = RacingConf(), RacingSettings("recall")
    assert (tuple(shown.schedule or ()), shown.delta, shown.min_questions, shown.seed) == \
        (used.schedule, used.delta, used.min_questions, used.seed)
