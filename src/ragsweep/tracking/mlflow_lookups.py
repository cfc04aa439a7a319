"""The runs the MLflow tracker finds again: a configuration's FINISHED run, one made by older code, a race's
earlier rounds, and a sweep's attempts whose process died."""

from __future__ import annotations

from ragsweep.tracking.base import TrackedRun
from ragsweep.tracking.processes import alive, mark_lost
from ragsweep.tracking.tags import FINGERPRINT_TAG, RACE_FINGERPRINT_TAG, RACE_SEED_TAG, UNVERSIONED_TAG


def tracked(run) -> TrackedRun:
    """An MLflow run as the engine reads it."""
    return TrackedRun(run.info.run_id, run.info.status, dict(run.data.metrics), dict(run.data.tags))


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
            self.client().set_tag(run_id, "mlflow.parentRunId", parent_run_id)

    def note_reused(self, parent_run_id: str, config_fingerprint: str, run_id: str) -> None:
        """Record on the parent that a skipped job's result is the finished run `run_id` (one tag per job)."""
        self.client().set_tag(parent_run_id, f"ragsweep.reused.{config_fingerprint[:16]}", run_id)

    def _close_lost_attempts(self, parent_run_id: str, config_fingerprint: str | None) -> None:
        """Mark KILLED this configuration's RUNNING runs in this sweep whose process or node is gone: the
        job is starting again (Ray retries a task whose node died; a scheduler requeues a job)."""
        if config_fingerprint is None:
            return
        for run in self.client().search_runs(
                [self.experiment_id()],
                f"tags.mlflow.parentRunId = '{parent_run_id}' and tags.`{FINGERPRINT_TAG}` = '{config_fingerprint}' "
                "and attributes.status = 'RUNNING'"):
            if alive(run.data.tags) is False:
                mark_lost(self, run.info.run_id, "its job started again after its process or node was lost")
