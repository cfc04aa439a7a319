"""The runs the MLflow tracker finds again: a configuration's FINISHED run, one made by older code, a race's
earlier rounds, and the RUNNING runs whose process or node is gone, which it closes as KILLED."""

from __future__ import annotations

import logging
import os
import time

from ragsweep.tracking.base import TrackedRun
from ragsweep.tracking.mlflow_store import PARENT_TAG, tracked
from ragsweep.tracking.processes import alive
from ragsweep.tracking.tags import FINGERPRINT_TAG, LOST_TAG, RACE_FINGERPRINT_TAG, RACE_SEED_TAG, UNVERSIONED_TAG

log = logging.getLogger(__name__)


class RunLookups:
    """`MlflowTracker`'s searches of its experiment (it provides `client()` and `experiment_id()`)."""

    def _newest(self, condition: str, most: int = 1) -> list:
        return self.client().search_runs([self.experiment_id()], filter_string=condition,
                                         order_by=["attributes.start_time DESC"], max_results=most)

    def finished_run(self, config_fingerprint: str) -> TrackedRun | None:
        """The newest FINISHED job run with this config fingerprint in the experiment, or None."""
        runs = self._newest(f"tags.`{FINGERPRINT_TAG}` = '{config_fingerprint}' and attributes.status = 'FINISHED'")
        return tracked(runs[0]) if runs else None

    def finished_by_other_code(self, unversioned: str, config_fingerprint: str) -> TrackedRun | None:
        """The newest FINISHED job run of this configuration made by code of other versions (its unversioned
        fingerprint equal, its fingerprint not), or None. A run from before versions were tagged carries its
        unversioned fingerprint as its fingerprint."""
        found = []
        for tag in (UNVERSIONED_TAG, FINGERPRINT_TAG):
            found += self._newest(f"tags.`{tag}` = '{unversioned}' and attributes.status = 'FINISHED'", most=5)
        others = [run for run in found if run.data.tags.get(FINGERPRINT_TAG) != config_fingerprint]
        return tracked(max(others, key=lambda run: run.info.start_time)) if others else None

    def race_run(self, config_fingerprint: str, seed: int) -> TrackedRun | None:
        """The newest run of this configuration in a race with this question order (any status), or None."""
        runs = self._newest(f"tags.`{RACE_FINGERPRINT_TAG}` = '{config_fingerprint}' "
                            f"and tags.`{RACE_SEED_TAG}` = '{seed}'")
        return tracked(runs[0]) if runs else None

    def adopt(self, run_id: str, parent_run_id: str | None) -> None:
        """Make `run_id` a child of `parent_run_id`: a race run again takes in the rounds its configurations
        finished."""
        if parent_run_id:
            self.set_tags(run_id, {PARENT_TAG: parent_run_id})

    def note_reused(self, parent_run_id: str, config_fingerprint: str, run_id: str) -> None:
        """Record on the parent that a skipped job's result is the finished run `run_id` (one tag per job)."""
        self.set_tags(parent_run_id, {f"ragsweep.reused.{config_fingerprint[:16]}": run_id})

    def _close_lost_attempts(self, parent_run_id: str, config_fingerprint: str | None) -> None:
        """Mark KILLED this configuration's RUNNING runs in this sweep whose process or node is gone: the
        job is starting again (Ray retries a task whose node died; a scheduler requeues a job)."""
        if config_fingerprint is None:
            return
        for run in self.client().search_runs(
                [self.experiment_id()],
                f"tags.`{PARENT_TAG}` = '{parent_run_id}' and tags.`{FINGERPRINT_TAG}` = '{config_fingerprint}' "
                "and attributes.status = 'RUNNING'"):
            if alive(run.data.tags) is False:
                self.mark_lost(run.info.run_id, "its job started again after its process or node was lost")

    def mark_lost(self, run_id: str, why: str) -> None:
        """Close a run as KILLED, saying why in its LOST_TAG."""
        self.set_tags(run_id, {LOST_TAG: why})
        self.finish(run_id, "KILLED")

    def kill_running_children(self, parent_run_id: str, wait_s: float = 10.0) -> list[str]:
        """Mark KILLED the parent's RUNNING child runs once their processes have exited (at most `wait_s`).

        For a sweep that ended or stopped: every job has returned, or was stopped, so a run still
        RUNNING lost its process (Ctrl-C stopped a parallel worker before it closed its run) or its
        node. Waiting first keeps a job that is still closing its run from overwriting the status.
        """
        client = self.client()
        running = client.search_runs(
            [self.experiment_id()],
            f"tags.`{PARENT_TAG}` = '{parent_run_id}' and attributes.status = 'RUNNING'", max_results=10_000)
        deadline = time.monotonic() + wait_s
        killed = []
        for run in running:
            tags = run.data.tags
            while tags.get("ragsweep.pid") != str(os.getpid()) and time.monotonic() < deadline \
                    and alive(tags) is not False:
                time.sleep(0.1)
            if client.get_run(run.info.run_id).info.status == "RUNNING":
                self.mark_lost(run.info.run_id, "still RUNNING when its sweep ended: its process or node was lost")
                killed.append(run.info.run_id)
        return killed

    def kill_orphans(self) -> list[str]:
        """Mark KILLED the RUNNING runs that nothing will close: those whose process is known to be gone
        (this host's pids, a dead Ray node), and the jobs of sweeps that have ended."""
        running = self.client().search_runs([self.experiment_id()], "attributes.status = 'RUNNING'",
                                            max_results=10_000)
        orphans = [run.info.run_id for run in running if alive(run.data.tags) is False]
        open_parents = {run.info.run_id for run in running if run.info.run_id not in orphans}
        for run in running:
            parent = run.data.tags.get(PARENT_TAG)
            if run.info.run_id not in orphans and parent and parent not in open_parents:
                orphans.append(run.info.run_id)
        for run_id in orphans:
            self.mark_lost(run_id, "RUNNING when a later sweep started, with its process, node or sweep gone")
        if orphans:
            log.warning("marked %d run(s) KILLED: their processes are gone (%s)", len(orphans), ", ".join(orphans))
        return orphans
