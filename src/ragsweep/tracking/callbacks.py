"""One MLflow parent run per sweep, its summary table at the end: the Hydra callback for `sweep.py -m`,
and `Sweep`, which it shares with `ragsweep.Evaluation.sweep`.

Runs in the process that launches the jobs, so the experiment and parent run are created once,
before any job runs. Jobs receive the parent's id through their own config, which every launcher
(local, joblib, Ray, submitit) rebuilds from the launching process's. Hydra calls no callback when
a sweep stops early, so an exit handler closes the parent then, with a summary of the finished
jobs: KILLED after Ctrl-C, FAILED otherwise (a job raised through the launcher, a node was lost).
"""

from __future__ import annotations

import atexit
import logging
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import pandas as pd
from hydra.experimental.callback import Callback
from hydra.utils import instantiate
from omegaconf import DictConfig, read_write

from ragsweep.interrupts import interrupt
from ragsweep.tracking.judges import judge_notes, summary_table
from ragsweep.tracking.provenance import git_sha, package_versions, sweep_name
from ragsweep.tracking.mlflow_tracker import PARENT_RUN_ENV, MlflowTracker
from ragsweep.tracking.runs import (DEFAULT_RANKING_METRIC, default_ranking_metric, failure_lines, markdown,
                                    sweep_jobs, tie_note)

log = logging.getLogger(__name__)


TOP_SHOWN = 10  # configurations of the latest sweep in the experiment's description


class Sweep:
    """One sweep's MLflow parent run: opened before its jobs, closed with a ranked summary after them.

    Shared by the Hydra callback below (`sweep.py -m`) and `ragsweep.Evaluation.sweep`, so a sweep from
    Python leaves the same parent run, tags and summary files as one from the command line.
    """

    def __init__(self, tracker: MlflowTracker, name: str, overrides: str, sweep_dir: Path,
                 metric: str | None = None) -> None:
        self.tracker, self.name, self.overrides = tracker, name, overrides
        self.sweep_dir, self.asked = Path(sweep_dir), metric
        self.metric = metric or DEFAULT_RANKING_METRIC  # until the jobs say which stage the sweep varies
        self.parent_run_id: str | None = None

    def open(self) -> str:
        """Mark runs orphaned by earlier sweeps KILLED, then start the parent run; return its id."""
        self.tracker.kill_orphans()
        tags = {"ragsweep.sweep": self.name, "ragsweep.git_sha": git_sha(), "ragsweep.overrides": self.overrides,
                **{f"version.{package}": version for package, version in package_versions().items()}}
        title = f"sweep {self.overrides}"[:200] if self.name == "adhoc" else f"sweep:{self.name}"
        self.parent_run_id = self.tracker.start_parent(f"{title} {time.strftime('%Y-%m-%d %H:%M:%S')}", tags)
        log.info("MLflow parent run %s in experiment %r", self.parent_run_id, self.tracker.experiment)
        return self.parent_run_id

    def close(self) -> tuple[pd.DataFrame, dict[str, int], list[Path], pd.DataFrame | None]:
        """Every job has returned: close any still RUNNING as lost, write the summary, end the parent
        (FAILED when a job failed or was lost). Returns the jobs, their count by status, the summary files
        and the ranked table (None when no job has the metric)."""
        self.tracker.kill_running_children(self.parent_run_id, wait_s=0)
        jobs = sweep_jobs(self.tracker, self.parent_run_id)
        count = _count_by_status(jobs)
        files, table = self._write_summary(jobs)
        status = "FAILED" if count["FAILED"] or count["KILLED"] else "FINISHED"
        self.tracker.end_parent(self.parent_run_id, status, {"ragsweep.jobs": str(len(jobs)), "ragsweep.failed_jobs":
                                                             str(count["FAILED"]), "ragsweep.lost_jobs":
                                                             str(count["KILLED"])}, files)
        self.parent_run_id = None
        return jobs, count, files, table

    def stop(self, status: str) -> str:
        """Close the runs a stop left RUNNING as KILLED, and the parent as `status` (KILLED after Ctrl-C, FAILED
        after fail_fast or an error) with a summary of what finished; return a line that says so."""
        self.tracker.kill_running_children(self.parent_run_id)
        jobs = sweep_jobs(self.tracker, self.parent_run_id)
        count = _count_by_status(jobs)
        files, _ = self._write_summary(jobs[jobs["status"] == "FINISHED"] if not jobs.empty else jobs)
        self.tracker.end_parent(self.parent_run_id, status,
                                {"ragsweep.jobs": str(len(jobs)), "ragsweep.failed_jobs": str(count["FAILED"]),
                                 "ragsweep.interrupted_jobs": str(count["KILLED"])}, files)
        self.parent_run_id = None
        summary = f", summary in {files[1]}" if files else ""
        how = "interrupted" if status == "KILLED" else "the sweep stopped early"
        return (f"{how}: {count['FINISHED']} job(s) finished, {count['FAILED']} failed, {count['KILLED']} "
                f"stopped (KILLED){summary}")

    def notes(self, jobs: pd.DataFrame) -> list[str]:
        """The lines under the ranked table: which judges scored it, and a tie at the top."""
        return [*judge_notes(jobs), *filter(None, [tie_note(jobs, self.metric)])]

    def _write_summary(self, jobs: pd.DataFrame) -> tuple[list[Path], pd.DataFrame | None]:
        """summary.csv and summary.md in the sweep folder: `jobs` ranked by the sweep's metric, each judged run
        with its judge and that judge's AUC; summary.md also says which judge(s) scored the judged metrics."""
        self.metric = self.asked or default_ranking_metric(jobs)
        if jobs.empty or f"metrics.{self.metric}" not in jobs:
            return [], None
        table = summary_table(jobs, self.metric)
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        files = [self.sweep_dir / "summary.csv", self.sweep_dir / "summary.md"]
        table.to_csv(files[0], index=False)
        notes = "".join(f"{note}\n\n" for note in self.notes(jobs))
        files[1].write_text(f"# Sweep {self.name} ranked by {self.metric}\n\n{notes}" + markdown(table))
        shown = table.drop(columns=["run_id"]).head(TOP_SHOWN)
        self.tracker.describe_experiment(
            f"**Latest sweep** ({self.name}, {time.strftime('%Y-%m-%d %H:%M')}, parent run {self.parent_run_id}): "
            f"top {len(shown)} of {len(table)} configurations by **{self.metric}**\n\n{notes}{markdown(shown)}")
        return files, table


class SweepRun(Callback):
    """Opens the sweep's parent run, marks orphaned runs KILLED, and closes the parent with a summary."""

    def __init__(self) -> None:
        self.sweep: Sweep | None = None
        self.interrupted = False  # set by Ctrl-C (SIGINT) while the sweep runs

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.sweep = Sweep(instantiate(config.tracking), sweep_name(config.hydra.runtime.choices),
                           " ".join(config.hydra.overrides.task), Path(str(config.hydra.sweep.dir)),
                           config.get("optimized_metric"))
        hand_to_jobs(config, self.sweep.open())
        if signal.getsignal(signal.SIGINT) in (signal.default_int_handler, interrupt):  # not if SIGINT is ignored
            signal.signal(signal.SIGINT, self._on_interrupt)
        atexit.register(self._end_early)  # a sweep that stops before on_multirun_end: Ctrl-C, fail_fast, an error

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.sweep is None or self.sweep.parent_run_id is None:
            return
        if signal.getsignal(signal.SIGINT) == self._on_interrupt:
            signal.signal(signal.SIGINT, interrupt)
        jobs, count, files, table = self.sweep.close()
        if table is not None:
            print(f"\nSweep summary, ranked by {self.sweep.metric} (also {files[1]}):\n{markdown(table)}"
                  + "".join(f"\n{note}\n" for note in self.sweep.notes(jobs)))
        failed, lost = count["FAILED"], count["KILLED"]
        if failed:
            print(f"ragsweep: {failed} of {len(jobs)} job(s) FAILED; their tracebacks are in MLflow "
                  "(artifact traceback.txt). Re-running the sweep runs only those.", file=sys.stderr)
            for line in failure_lines(jobs):
                print(f"  {line}", file=sys.stderr)
        if lost:
            print(f"ragsweep: {lost} job(s) lost their process or node (marked KILLED); re-running the sweep runs "
                  "only those.", file=sys.stderr)
        if failed or lost:
            raise SystemExit(1)

    def _on_interrupt(self, signum: int, frame: FrameType | None) -> None:
        self.interrupted = True  # remembered for _end_early: the parent ends KILLED, not FAILED
        interrupt(signum, frame)

    def _end_early(self) -> None:
        """At exit, a parent still open: the sweep stopped before on_multirun_end (Hydra skips it then)."""
        if self.sweep is None or self.sweep.parent_run_id is None:
            return
        if self.interrupted:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave the runs half closed
        line = self.sweep.stop("KILLED" if self.interrupted else "FAILED")  # FAILED: fail_fast, an error, a lost node
        print(f"ragsweep: {line}; run the same command again to run the rest", file=sys.stderr, flush=True)


def _count_by_status(jobs: pd.DataFrame) -> dict[str, int]:
    """How many of a sweep's jobs (one row per configuration) ended FINISHED, FAILED and KILLED."""
    return {status: int((jobs["status"] == status).sum()) if not jobs.empty else 0
            for status in ("FINISHED", "FAILED", "KILLED")}


def hand_to_jobs(config: DictConfig, parent_run_id: str) -> None:
    """Give every job of this sweep the parent run's id, wherever it runs.

    Launchers build each job's config anew from `hydra.overrides.hydra` of the launching process's
    config (Hydra's `load_sweep_config`), and Hydra's `run_job` sets `hydra.job.env_set` in the job's
    own process, so the id reaches jobs on other machines, which the launching process's environment
    and files do not (Ray, SLURM).
    """
    with read_write(config.hydra.overrides):
        config.hydra.overrides.hydra.append(f"++hydra.job.env_set.{PARENT_RUN_ENV}={parent_run_id}")
