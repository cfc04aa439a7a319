"""A race over a grid (`hydra/sweeper=racing`): rounds of more questions, losing configurations stopped early.

Each round hands the surviving configurations to the sweeper's `Launch` (the configured launcher, basic, joblib,
Ray or submitit, or the configuration kept in the sweeping process: `racing.kept`) with the first n questions of
one seeded order (`racing.rounds`); each job returns its per-question
scores on the raced metric; `Race` (`racing.schedule`) stops those its confidence sequences show worse than the
leader. Whatever survives runs every question, so the winner's metrics are over the whole dataset.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ragsweep.judging.base import VALIDATED_AUC
from ragsweep.metrics.registry import metric as declared
from ragsweep.metrics.registry import objectives as declared_objectives
from ragsweep.runner.errors import ConfigError
from ragsweep.runner.racing.schedule import Race, first_round, growing_sizes, round_sizes
from ragsweep.runner.racing.rounds import RACE_KEY, RaceRound

log = logging.getLogger(__name__)

RACING_SWEEPER = "RacingSweeper"  # the class name `hydra/sweeper=racing` instantiates


@dataclass(frozen=True)
class RacingSettings:
    """`hydra.sweeper.racing`: the metric raced on, the chance of stopping the true best, the schedule."""

    metric: str
    delta: float = 0.05
    min_questions: int = 10
    schedule: tuple[float, ...] = ()  # shares after each round; () grows the rounds from the question set
    seed: int = 0

    @classmethod
    def from_config(cls, racing: Mapping[str, Any] | None,
                    optimized_metric: str | Sequence[str] | None) -> RacingSettings:
        """Checked settings; ConfigError (one line) for a metric that cannot be raced on (a race stops
        configurations by one metric, so a list `optimized_metric` needs `racing.metric`), a delta outside
        (0, 1), a schedule that does not end at 100% or a bad min_questions."""
        racing = dict(racing or {})
        objectives = declared_objectives(optimized_metric)
        if not racing.get("metric") and len(objectives) > 1:
            raise ConfigError(f"hydra/sweeper=racing races on one metric and optimized_metric="
                              f"[{','.join(objectives)}] names {len(objectives)}: set hydra.sweeper.racing.metric, "
                              f"e.g. hydra.sweeper.racing.metric={objectives[0]}")
        name = racing.get("metric") or (objectives[0] if objectives else None)
        if not name:
            raise ConfigError("hydra/sweeper=racing needs a metric to race on: set hydra.sweeper.racing.metric "
                              "(or optimized_metric), e.g. hydra.sweeper.racing.metric=token_iou")
        try:
            raced = declared(str(name))
        except ValueError as error:
            raise ConfigError(f"hydra.sweeper.racing.metric: {error}") from None
        if not raced.per_question or not raced.rankable or any(math.isinf(b) for b in raced.bounds):
            raise ConfigError(f"hydra.sweeper.racing.metric={name}: a race compares per-question values with known "
                              f"bounds; {name} is {'run-level' if not raced.per_question else 'unbounded or not a quality'}"
                              "; race on e.g. token_iou, ndcg or answer_f1")
        delta = racing.get("delta", 0.05)
        if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
            raise ConfigError(f"hydra.sweeper.racing.delta={delta}: the chance of stopping the true best must be "
                              "in (0, 1), e.g. 0.05")
        minimum = racing.get("min_questions", 10)
        if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 1:
            raise ConfigError(f"hydra.sweeper.racing.min_questions={minimum}: give a positive integer, e.g. 10")
        schedule = tuple(racing.get("schedule") or cls.schedule)
        try:
            if schedule:
                round_sizes(schedule, 100, 1)
        except ValueError as error:
            raise ConfigError(f"hydra.sweeper.{error}") from None
        return cls(raced.name, float(delta), minimum, tuple(float(s) for s in schedule),
                   int(racing.get("seed", 0)))

    def first(self, configurations: int) -> int:
        """The first round's questions: `min_questions`, or more for a schedule grown from the question set
        (`schedule.first_round`)."""
        return self.min_questions if self.schedule else first_round(configurations, self.delta, self.min_questions)

    def sizes(self, total: int, configurations: int) -> list[int]:
        """Questions run after each round: the shares of `schedule`, or rounds that grow by half from a tenth of
        the questions (`schedule.growing_sizes`), so that a round is never mostly the fixed cost of running it."""
        if self.schedule:
            return round_sizes(self.schedule, total, self.min_questions)
        return growing_sizes(self.first(configurations), total)

    def describe_schedule(self, configurations: int) -> str:
        if self.schedule:
            return str(list(self.schedule))
        return (f"grown from the questions: a tenth of them (at least {self.first(configurations)}), then 1.5 "
                "times the questions before each round")

    def race_round(self, round_index: int, configurations: int, slot: int, run: str | None = None) -> RaceRound:
        """The round `round_index` of this race for the configuration at `slot` of the grid, extending the run its
        previous round left open."""
        return RaceRound(self.seed, round_index, self.schedule, self.min_questions, self.metric,
                         self.first(configurations), run, slot)


def race_override(race: RaceRound) -> str:
    """The command-line override that gives a launched job its round (the run id quoted: a hex id such as 1e50...
    reads as a number unquoted)."""
    values = ",".join(f"{key}:'{value}'" if key == "run" else
                      f"{key}:[{','.join(repr(v) for v in value)}]" if isinstance(value, list) else f"{key}:{value}"
                      for key, value in race.setting().items())
    return f"+{RACE_KEY}={{{values}}}"


@dataclass(frozen=True)
class RoundJob:
    """One configuration's job in a round: its place in the grid, its grid point and its round."""

    slot: int
    point: tuple[str, ...]
    race: RaceRound

    @property
    def overrides(self) -> list[str]:
        """The job's command-line overrides, as a launcher takes them."""
        return [*self.point, race_override(self.race)]


def racing_problems(primary: DictConfig, points: Sequence[Sequence[str]]) -> list[str]:
    """A racing sweep's problems before any work: its settings, at least two configurations, and a judged metric
    only from a judge whose held-out AUC clears `VALIDATED_AUC`."""
    try:
        settings = RacingSettings.from_config(OmegaConf.to_container(primary.hydra.sweeper.get("racing") or {},
                                                                     resolve=True),
                                              primary.get("optimized_metric"))
    except ConfigError as error:
        return [str(error)]
    if len(points) < 2:
        return ["hydra/sweeper=racing: a race needs at least two configurations; give a grid (e.g. k=3,5,10) or "
                "use the basic sweeper for one"]
    if declared(settings.metric).stage == "judged":
        auc = OmegaConf.select(primary, "judge.auc")
        if auc is None or auc < VALIDATED_AUC:
            return [f"hydra.sweeper.racing.metric={settings.metric}: its judge has no held-out AUC of at least "
                    f"{VALIDATED_AUC} (judge.auc={auc}); race on a reference-based metric such as answer_f1, or "
                    "validate the judge with `ragsweep calibrate`"]
    return []


@dataclass
class RaceRecord:
    """What a race did, for its parent run and its summary."""

    metric: str
    delta: float
    total: int = 0
    rounds: list[dict] = field(default_factory=list)  # questions and survivors after each round
    stopped: dict[str, dict] = field(default_factory=dict)  # configuration -> why it stopped
    failed: dict[str, str] = field(default_factory=dict)  # configuration -> its job's failure
    runs: dict[str, str] = field(default_factory=dict)  # configuration -> its run id
    open: dict[str, bool] = field(default_factory=dict)  # configuration -> its run left RUNNING by its last round
    questions: dict[str, int] = field(default_factory=dict)  # configuration -> questions it ran
    left_out: dict[str, int] = field(default_factory=dict)  # configuration -> its failed questions
    winner: str | None = None

    @property
    def evaluations(self) -> int:
        return sum(self.questions.values())

    def summary(self) -> str:
        """The race in one line, as the sweep ends."""
        full = self.total * len(self.questions)
        winner = (f"winner {self.winner}, which ran all {self.total} questions" if self.winner
                  else "no winner: every configuration failed")
        return (f"Race on {self.metric}: {winner}; {len(self.stopped)} of {len(self.questions)} configurations "
                f"stopped early, {len(self.failed)} failed; {self.evaluations} of {full} (configuration, question) "
                f"evaluations ({self.evaluations / full:.0%} of a full grid)" if full else
                f"Race on {self.metric}: {winner}")

    def to_json(self) -> str:
        kept = {key: value for key, value in asdict(self).items() if key != "open"}
        return json.dumps({**kept, "evaluations": self.evaluations,
                           "full_grid_evaluations": self.total * len(self.questions)}, indent=2)


Launch = Callable[[list[RoundJob]], list[Any]]  # a round's jobs -> their race.json contents (None: failed)


def run_race(grid: Sequence[Sequence[str]], settings: RacingSettings, launch: Launch,
             exclude: Collection[str] = ()) -> RaceRecord:
    """Race the grid's configurations: launch each round's survivors, stop the losers, end with a winner that ran
    every question (or none, when every configuration failed). A configuration below the leader after the last
    round ran every question: it lost, it was not stopped. `exclude`: the override keys left out of job names."""
    labels = configuration_labels(grid, exclude)
    record = RaceRecord(settings.metric, settings.delta)
    raced = declared(settings.metric)
    race: Race | None = None
    survivors = list(range(len(grid)))
    round_index = 0
    while survivors:
        results = launch([RoundJob(i, tuple(grid[i]),
                                   settings.race_round(round_index, len(grid), i, held_open(record, labels[i])))
                          for i in survivors])
        scores: dict[str, list[float | None]] = {}
        for i, result in zip(survivors, results, strict=True):
            if result is None:
                record.failed[labels[i]] = f"its job failed in round {round_index + 1}"
                continue
            record.total = int(result["total"])
            record.runs[labels[i]] = result["run_id"]
            record.open[labels[i]] = bool(result.get("open"))
            record.questions[labels[i]] = int(result["questions"])
            record.left_out[labels[i]] = sum(value is None for value in result["values"])
            scores[labels[i]] = result["values"]
        if not scores:
            break
        sizes = settings.sizes(record.total, len(grid))
        if race is None:
            race = Race(labels, record.total, raced.bounds, settings.delta, raced.direction != "minimize")
        for label in record.failed:
            race.withdraw(label)
        last = sizes[min(round_index, len(sizes) - 1)] == record.total
        for stop in race.update(round_index, scores):
            if not last:
                record.stopped[stop.config] = {**asdict(stop), "round": round_index + 1}
        survivors = [i for i in survivors if labels[i] in race.survivors]
        record.rounds.append({"round": round_index + 1, "questions": sizes[min(round_index, len(sizes) - 1)],
                              "survivors": [labels[i] for i in survivors]})
        log.info("%s", progress_line(record, len(grid), len(sizes)))
        if last:
            break
        round_index = len(sizes) - 1 if len(survivors) == 1 else round_index + 1  # a lone survivor goes straight on
    if race is not None and race.history and race.leader in race.survivors:
        record.winner = race.leader
    return record


def held_open(record: RaceRecord, label: str) -> str | None:
    """The configuration's run its last round left RUNNING, which its next round extends without reopening."""
    return record.runs[label] if record.open.get(label) else None


def progress_line(record: RaceRecord, configurations: int, rounds: int) -> str:
    """Where a race stands after its latest round: who goes on, and the (configuration, question) evaluations the
    configurations stopped so far will not run, out of the full grid's."""
    latest = record.rounds[-1]
    survivors = latest["survivors"]
    names = f": {'; '.join(survivors)}" if len(survivors) <= SURVIVORS_NAMED else ""
    full = record.total * configurations
    saved = sum(record.total - record.questions[label] for label in record.stopped)
    share = f" ({saved / full:.0%})" if full else ""
    if latest["questions"] < record.total:
        standing = f"{len(survivors)} of {configurations} configurations go on{names}"
    else:
        standing = f"{sum(n == record.total for n in record.questions.values())} configurations ran every question"
    return (f"race round {latest['round']} of at most {rounds}: {latest['questions']} of {record.total} questions; "
            f"{standing}; {len(record.stopped)} stopped, {len(record.failed)} failed; the stopped save {saved} of "
            f"the full grid's {full} evaluations{share}")


SURVIVORS_NAMED = 5  # a round's line names its survivors when there are this few


def configuration_labels(grid: Sequence[Sequence[str]], exclude: Collection[str] = ()) -> list[str]:
    """Each point's name as Hydra names its job (`hydra.job.override_dirname`: its overrides sorted, those of
    the `exclude` keys left out), which is also its run's name."""
    return [",".join(sorted(o for o in point if o.split("=", 1)[0].lstrip("+~") not in exclude)) or "defaults"
            for point in grid]
