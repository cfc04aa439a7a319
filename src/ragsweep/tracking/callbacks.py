"""Hydra callback: one MLflow parent run per multirun, its summary table at the end.

Runs in the process that launches the jobs, so the experiment and parent run are created once,
before any job runs. Jobs find the parent in the file `PARENT_RUN_FILE` in the sweep folder.
"""

from __future__ import annotations

import atexit
import logging
import sys
import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from hydra.utils import instantiate
from omegaconf import DictConfig

from ragsweep.runner.identity import git_sha, package_versions, sweep_name
from ragsweep.tracking.mlflow_tracker import PARENT_RUN_FILE, MlflowTracker
from ragsweep.tracking.runs import DEFAULT_RANKING_METRIC, markdown, summary_table, sweep_jobs

log = logging.getLogger(__name__)


class SweepRun(Callback):
    """Opens the sweep's parent run, marks orphaned runs KILLED, and closes the parent with a summary."""

    def __init__(self) -> None:
        self.tracker: MlflowTracker | None = None
        self.parent_run_id: str | None = None
        self.parent_file: Path | None = None

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
        atexit.register(self._abandon)  # a sweep that stops early (fail_fast, an error) ends its parent FAILED
        log.info("MLflow parent run %s in experiment %r", self.parent_run_id, self.tracker.experiment)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self.tracker is None or self.parent_run_id is None:
            return
        metric = config.get("optimized_metric") or DEFAULT_RANKING_METRIC
        jobs = sweep_jobs(self.tracker, self.parent_run_id)
        failed = int((jobs["status"] == "FAILED").sum()) if not jobs.empty else 0
        files = []
        if not jobs.empty and f"metrics.{metric}" in jobs:
            table = summary_table(jobs, metric)
            folder = Path(str(config.hydra.sweep.dir))
            folder.mkdir(parents=True, exist_ok=True)
            files = [folder / "summary.csv", folder / "summary.md"]
            table.to_csv(files[0], index=False)
            files[1].write_text(f"# Sweep {sweep_name(config.hydra.runtime.choices)} ranked by {metric}\n\n"
                                + markdown(table))
            print(f"\nSweep summary, ranked by {metric} (also {files[1]}):\n{markdown(table)}")
        status = "FAILED" if failed else "FINISHED"
        self.tracker.end_parent(self.parent_run_id, status,
                                {"ragsweep.jobs": str(len(jobs)), "ragsweep.failed_jobs": str(failed)}, files)
        self.parent_file.unlink(missing_ok=True)
        self.parent_run_id = None
        if failed:
            print(f"ragsweep: {failed} of {len(jobs)} job(s) FAILED; their tracebacks are in MLflow "
                  "(artifact traceback.txt). Re-running the sweep runs only those.", file=sys.stderr)
            raise SystemExit(1)

    def _abandon(self) -> None:
        if self.tracker is not None and self.parent_run_id is not None:
            self.tracker.end_parent(self.parent_run_id, "FAILED", {}, [])
