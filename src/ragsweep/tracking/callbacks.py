"""One MLflow parent run per sweep, its summary table at the end: the Hydra callback for `sweep.py -m`, around
the `Sweep` it shares with `ragsweep.Evaluation.sweep`.

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
from pathlib import Path
from types import FrameType
from typing import Any

from hydra.experimental.callback import Callback
from hydra.utils import instantiate
from omegaconf import DictConfig, read_write

from ragsweep.disk import cannot_write, write_refused
from ragsweep.interrupts import interrupt
from ragsweep.tracking.tags import PARENT_RUN_ENV
from ragsweep.tracking.provenance import sweep_name
from ragsweep.tracking.runs import failure_lines, markdown
from ragsweep.tracking.store import STORE_SETTING, full_store
from ragsweep.tracking.sweep import Sweep

log = logging.getLogger(__name__)


class SweepRun(Callback):
    """Opens the sweep's parent run, marks orphaned runs KILLED, and closes the parent with a summary."""

    def __init__(self) -> None:
        self.sweep: Sweep | None = None
        self.interrupted = False  # set by Ctrl-C (SIGINT) while the sweep runs

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.sweep = Sweep(instantiate(config.tracking), sweep_name(config.hydra.runtime.choices),
                           " ".join(config.hydra.overrides.task), Path(str(config.hydra.sweep.dir)),
                           config.get("optimized_metric"))
        try:
            hand_to_jobs(config, self.sweep.open())
        except Exception as error:
            _end_on_refused_write(error)
            raise
        if signal.getsignal(signal.SIGINT) in (signal.default_int_handler, interrupt):  # not if SIGINT is ignored
            signal.signal(signal.SIGINT, self._on_interrupt)
        atexit.register(self._end_early)  # a sweep that stops before on_multirun_end: Ctrl-C, fail_fast, an error

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.sweep is None or self.sweep.parent_run_id is None:
            return
        if signal.getsignal(signal.SIGINT) == self._on_interrupt:
            signal.signal(signal.SIGINT, interrupt)
        try:
            jobs, count, files, table = self.sweep.close()
        except Exception as error:
            _end_on_refused_write(error)
            raise
        if table is not None:
            print(f"\nSweep summary, ranked by {self.sweep.metric} (also {files[1]}):\n{markdown(table)}"
                  + "".join(f"\n{note}\n" for note in self.sweep.notes(jobs)))
        failed, lost = count["FAILED"], count["KILLED"]
        if failed:
            print(f"ragsweep: {failed} of {len(jobs)} job(s) FAILED; their tracebacks are in MLflow "
                  "(artifact traceback.txt). Re-running the sweep runs only those.", file=sys.stderr)
            for line in failure_lines(self.sweep.tracker, jobs):
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
        try:
            line = self.sweep.stop("KILLED" if self.interrupted else "FAILED")  # FAILED: fail_fast, an error, a lost node
        except Exception as error:
            if write_refused(error) is None and full_store(error) is None:
                raise
            line = ("the sweep stopped early; its runs still RUNNING stay so, as the disk the sweep stopped at "
                    "takes no more (the next sweep marks them KILLED)")  # the error line named it
        print(f"ragsweep: {line}; run the same command again to run the rest", file=sys.stderr, flush=True)


def _end_on_refused_write(error: Exception) -> None:
    """End the sweep in one line, exit code 1, when `error` is a write the disk refused, the store's among them:
    Hydra turns a callback's error into a warning and goes on, so every job would fail the same way."""
    full = full_store(error)
    refused = full or write_refused(error)
    if refused is not None:
        print(f"ragsweep: error: {cannot_write(refused, STORE_SETTING if full else None)}", file=sys.stderr)
        raise SystemExit(1) from None


def hand_to_jobs(config: DictConfig, parent_run_id: str) -> None:
    """Give every job of this sweep the parent run's id, wherever it runs.

    Launchers build each job's config anew from `hydra.overrides.hydra` of the launching process's
    config (Hydra's `load_sweep_config`), and Hydra's `run_job` sets `hydra.job.env_set` in the job's
    own process, so the id reaches jobs on other machines, which the launching process's environment
    and files do not (Ray, SLURM).
    """
    with read_write(config.hydra.overrides):
        config.hydra.overrides.hydra.append(f"++hydra.job.env_set.{PARENT_RUN_ENV}={parent_run_id}")
