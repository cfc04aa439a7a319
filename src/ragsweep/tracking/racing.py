"""A race in the store: each configuration's run tagged with how far it got, the parent with the whole race."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig

from ragsweep.tracking.base import RunStore
from ragsweep.tracking.tags import (PARENT_RUN_ENV, RACE_METRIC_TAG, STOPPED_ROUND_TAG, STOPPED_TAG,
                                    WINNER_TAG)


def record_race(config: DictConfig, record: Any, sweep_dir: Path) -> None:
    """Tag every configuration's run and the sweep's parent run with the race (`runner.racing.sweep.RaceRecord`),
    close every configuration's run (FINISHED, or FAILED when a round failed before reaching the run its last round
    left open), and attach race.json and race.md to the parent; the same two files are left in the sweep folder."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    files = [sweep_dir / "race.json", sweep_dir / "race.md"]
    files[0].write_text(record.to_json() + "\n")
    files[1].write_text(race_markdown(record))
    tracker: RunStore = instantiate(config.tracking)
    for label, run_id in record.runs.items():
        stopped = record.stopped.get(label)
        tags = {STOPPED_ROUND_TAG: str(stopped["round"]) if stopped else "none",
                WINNER_TAG: "true" if label == record.winner else "false"}
        if stopped:
            tags[STOPPED_TAG] = stop_reason(stopped, record.metric, record.total)
        tracker.set_tags(run_id, tags)
        if label not in record.failed:
            tracker.finish(run_id, "FINISHED")  # a stopped one was left open, a killed race's read back KILLED
        elif record.open.get(label):
            tracker.finish(run_id, "FAILED")
    parent = parent_run_id(config)
    if parent is None:
        return
    full = record.total * len(record.questions)
    tracker.set_tags(parent, {RACE_METRIC_TAG: record.metric, "ragsweep.race.delta": str(record.delta),
                              "ragsweep.race.rounds": str(len(record.rounds)),
                              "ragsweep.race.winner": record.winner or "none",
                              "ragsweep.race.evaluations": str(record.evaluations),
                              "ragsweep.race.full_grid_evaluations": str(full)})
    tracker.log_run_metrics(parent, {"race_evaluations_share": record.evaluations / full if full else 0.0})
    tracker.attach(parent, *files)


def stop_reason(stop: dict, metric: str, total: int) -> str:
    """`after 40 of 400 questions, recall 0.31 [0.12, 0.45] below chunker=fixed,k=10` (the paired difference to
    the leader then, and the interval of the confidence sequence that stopped it)."""
    return (f"after {stop['questions']} of {total} questions, {metric} {-stop['difference']:.4f} "
            f"[{-stop['high']:.4f}, {-stop['low']:.4f}] below {stop['leader']}")


def stopped_lines(tracker: RunStore) -> list[str]:
    """One line per configuration of the experiment a race stopped early (they are not ranked: they did not run
    every question), with how far it got and why it stopped."""
    return [f"{run.name}: {run.tags[STOPPED_TAG]}" for run in tracker.runs(status="FINISHED")
            if STOPPED_TAG in run.tags]


def parent_run_id(config: DictConfig) -> str | None:
    """The sweep's parent run, as `tracking.callbacks.hand_to_jobs` handed it to the jobs."""
    prefix = f"++hydra.job.env_set.{PARENT_RUN_ENV}="
    handed = [line for line in config.hydra.overrides.hydra if str(line).startswith(prefix)]
    return str(handed[-1]).removeprefix(prefix) if handed else None


def race_markdown(record: Any) -> str:
    """The race as the parent's race.md: rounds, survivors, why each configuration stopped, the work done."""
    full = record.total * len(record.questions)
    lines = [f"# Race on {record.metric} (delta {record.delta})", "",
             f"Winner: {record.winner or 'none'}. Work: {record.evaluations} of {full} (configuration, question) "
             f"evaluations a full grid would do ({record.evaluations / full:.0%})." if full else "", "",
             "| round | questions | survivors |", "|---|---|---|"]
    lines += [f"| {r['round']} | {r['questions']} | {len(r['survivors'])} |" for r in record.rounds]
    lines += ["", "| configuration | questions | stopped in round | leader then | difference "
              "| interval (1 − 2δ/(K − 1)) |",
              "|---|---|---|---|---|---|"]
    for label, questions in record.questions.items():
        stop = record.stopped.get(label)
        if stop:
            low, high = stop["low"], stop["high"]
            lines.append(f"| {label} | {questions} | {stop['round']} | {stop['leader']} | {stop['difference']:+.4f} "
                         f"| [{low:+.4f}, {high:+.4f}] |")
        else:
            lines.append(f"| {label} | {questions} | | | | |")
    lines += [f"\n{label}: {why}" for label, why in record.failed.items()]
    return "\n".join(lines) + "\n"
