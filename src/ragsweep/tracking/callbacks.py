"""Hydra callback: one MLflow parent run per multirun, its summary table at the end.

Runs in the process that launches the jobs, so the experiment and parent run are created once,
before any job runs. Jobs find the parent in the file `PARENT_RUN_FILE` in the sweep folder.
Hydra calls no callback when a sweep stops early, so an exit handler closes the parent then:
KILLED with a summary of the finished jobs after Ctrl-C, FAILED otherwise.
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
from omegaconf import DictConfig

from ragsweep.results.judges import judge_notes, summary_table
from ragsweep.runner.identity import git_sha, package_versions, sweep_name
from ragsweep.runner.interrupts import interrupt
from ragsweep.tracking.mlflow_tracker import PARENT_RUN_FILE, MlflowTracker
from ragsweep.tracking.runs import DEFAULT_RANKING_METRIC, failure_lines, markdown, sweep_jobs

log = logging.getLogger(__name__)


class SweepRun(Callback):
    """Opens the sweep's parent run, marks orphaned runs KILLED, and closes the parent with a summary."""

    def __init__(self) -> None:
        self.tracker: MlflowTracker | None = None
        self.parent_run_id: str | None = None
        self.parent_file: Path | None = None
        self.interrupted = False  # set by Ctrl-C (SIGINT) while the sweep runs

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.tracker = instantiate(config.tracking)
        self.tracker.kill_orphans()
        name = sweep_name(config.hydra.runtime.choices)
        overrides = " ".join(config.hydra.overrides.task)
        tags = {"ragsweep.sweep": name, "ragsweep.git_sha": git_sha(), "ragsweep.overrides": overrides,
                **{f"version.{package}": version for package, version in package_versions().items()}}
        title = f"sweep {overrides}"[:200] if name == "adhoc" else f"sweep:{name}"
        self.parent_run_id = self.tracker.start_parent(f"{title} {time.strftime('%Y-%m-%d %H:%M:%S')}", tags)
        self.parent_file = Path(str(config.hydra.sweep.dir)) / PARENT_RUN_FILE
        self.parent_file.parent.mkdir(parents=True, exist_ok=True)
        self.parent_file.write_text(self.parent_run_id)
        self.sweep_dir = self.parent_file.parent
        self.heading = f"# Sweep {name}"
        self.metric = config.get("optimized_metric") or DEFAULT_RANKING_METRIC
        if signal.getsignal(signal.SIGINT) in (signal.default_int_handler, interrupt):  # not if SIGINT is ignored
            signal.signal(signal.SIGINT, self._on_interrupt)
        atexit.register(self._end_early)  # a sweep that stops before on_multirun_end: Ctrl-C, fail_fast, an error
        log.info("MLflow parent run %s in experiment %r", self.parent_run_id, self.tracker.experiment)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.tracker is None or self.parent_run_id is None:
            return
        if signal.getsignal(signal.SIGINT) == self._on_interrupt:
            signal.signal(signal.SIGINT, interrupt)
        jobs = sweep_jobs(self.tracker, self.parent_run_id)
        failed = int((jobs["status"] == "FAILED").sum()) if not jobs.empty else 0
        files, table = self._write_summary(jobs)
        if table is not None:
            print(f"\nSweep summary, ranked by {self.metric} (also {files[1]}):\n{markdown(table)}"
                  + "".join(f"\n{note}\n" for note in judge_notes(jobs)))
        status = "FAILED" if failed else "FINISHED"
        self.tracker.end_parent(self.parent_run_id, status,
                                {"ragsweep.jobs": str(len(jobs)), "ragsweep.failed_jobs": str(failed)}, files)
        self.parent_file.unlink(missing_ok=True)
        self.parent_run_id = None
        if failed:
            print(f"ragsweep: {failed} of {len(jobs)} job(s) FAILED; their tracebacks are in MLflow "
                  "(artifact traceback.txt). Re-running the sweep runs only those.", file=sys.stderr)
            for line in failure_lines(jobs):
                print(f"  {line}", file=sys.stderr)
            raise SystemExit(1)

    def _write_summary(self, jobs: pd.DataFrame) -> tuple[list[Path], pd.DataFrame | None]:
        """summary.csv and summary.md in the sweep folder: `jobs` ranked by the sweep's metric, each judged run
        with its judge and that judge's AUC; summary.md also says which judge(s) scored the judged metrics."""
        if jobs.empty or f"metrics.{self.metric}" not in jobs:
            return [], None
        table = summary_table(jobs, self.metric)
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        files = [self.sweep_dir / "summary.csv", self.sweep_dir / "summary.md"]
        table.to_csv(files[0], index=False)
        notes = "".join(f"{note}\n\n" for note in judge_notes(jobs))
        files[1].write_text(f"{self.heading} ranked by {self.metric}\n\n{notes}" + markdown(table))
        return files, table

    def _on_interrupt(self, signum: int, frame: FrameType | None) -> None:
        self.interrupted = True  # remembered for _end_early: the parent ends KILLED, not FAILED
        interrupt(signum, frame)

    def _end_early(self) -> None:
        """At exit, a parent still open: the sweep stopped before on_multirun_end (Hydra skips it then)."""
        if self.tracker is None or self.parent_run_id is None:
            return
        if self.interrupted:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave the runs half closed
            self._end_interrupted()
        else:
            self.tracker.end_parent(self.parent_run_id, "FAILED", {}, [])  # fail_fast or an error
        self.parent_file.unlink(missing_ok=True)
        self.parent_run_id = None

    def _end_interrupted(self) -> None:
        """Close the runs Ctrl-C stopped as KILLED and the parent as KILLED with a summary of what finished."""
        self.tracker.kill_running_children(self.parent_run_id)
        jobs = sweep_jobs(self.tracker, self.parent_run_id)
        count = {status: int((jobs["status"] == status).sum()) if not jobs.empty else 0
                 for status in ("FINISHED", "FAILED", "KILLED")}
        files, _ = self._write_summary(jobs[jobs["status"] == "FINISHED"] if not jobs.empty else jobs)
        self.tracker.end_parent(self.parent_run_id, "KILLED",
                                {"ragsweep.jobs": str(len(jobs)), "ragsweep.failed_jobs": str(count["FAILED"]),
                                 "ragsweep.interrupted_jobs": str(count["KILLED"])}, files)
        summary = f", summary in {files[1]}" if files else ""
        print(f"ragsweep: interrupted: {count['FINISHED']} job(s) finished, {count['KILLED']} stopped (KILLED)"
              f"{summary}; run the same command again to run the rest", file=sys.stderr, flush=True)
