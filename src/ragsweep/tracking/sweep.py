"""A sweep's parent run: opened before its jobs, closed with a ranked summary of them after."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ragsweep.metrics import registry
from ragsweep.tracking.judges import judge_notes, summary_table
from ragsweep.tracking.base import RunStore
from ragsweep.tracking.tags import GIT_SHA_TAG, RACE_METRIC_TAG, ROLE_TAG, VERSION_TAG
from ragsweep.tracking.provenance import git_sha, package_versions
from ragsweep.tracking.runs import PARETO_TAG, default_ranking_metric, markdown, pareto_split, sweep_jobs, tie_note
from ragsweep.tracking.table import metric_names, param

log = logging.getLogger(__name__)

TOP_SHOWN = 10  # configurations of the latest sweep in the experiment's description
MAX_TAG_CHARS = 5000  # MLflow's limit on a tag's value in older stores; the summary lists the whole front


class Sweep:
    """One sweep's parent run: opened before its jobs, closed with a ranked summary after them.

    Shared by the Hydra callback below (`sweep.py -m`) and `ragsweep.Evaluation.sweep`, so a sweep from
    Python leaves the same parent run, tags and summary files as one from the command line.
    """

    def __init__(self, tracker: RunStore, name: str, overrides: str, sweep_dir: Path,
                 metric: str | Sequence[str] | None = None) -> None:
        self.tracker, self.name, self.overrides = tracker, name, overrides
        self.objectives = registry.objectives(metric)  # several: a multi-objective sweep, its front tagged at the end
        self.sweep_dir, self.asked = Path(sweep_dir), (self.objectives[0] if self.objectives else None)
        self.metric = self.asked or registry.DEFAULT_RANKING  # until the jobs say which stage the sweep varies
        self.parent_run_id: str | None = None
        self.front_note: str | None = None

    def open(self) -> str:
        """Mark runs orphaned by earlier sweeps KILLED, then start the parent run; return its id."""
        self.tracker.kill_orphans()
        tags = {"ragsweep.sweep": self.name, GIT_SHA_TAG: git_sha(), "ragsweep.overrides": self.overrides,
                **{f"{VERSION_TAG}{package}": version for package, version in package_versions().items()}}
        title = f"sweep {self.overrides}"[:200] if self.name == "adhoc" else f"sweep:{self.name}"
        self.parent_run_id = self.tracker.start_parent(f"{title} {time.strftime('%Y-%m-%d %H:%M:%S')}", tags)
        log.info("parent run %s in experiment %r of %s", self.parent_run_id, self.tracker.experiment, self.tracker.uri)
        return self.parent_run_id

    def close(self) -> tuple[pd.DataFrame, dict[str, int], list[Path], pd.DataFrame | None]:
        """Every job has returned: close any still RUNNING as lost, write the summary, end the parent
        (FAILED when a job failed or was lost). Returns the jobs, their count by status, the summary files
        and the ranked table (None when no job has the metric)."""
        self.tracker.kill_running_children(self.parent_run_id, wait_s=0)
        jobs = sweep_jobs(self.tracker, self.parent_run_id)
        count = _count_by_status(jobs)
        front = self._tag_front(jobs) if len(self.objectives) > 1 else {}
        files, table = self._write_summary(jobs)
        if self.tracker.per_query_top is not None and table is not None:
            self._keep_per_query_of_best(table)
        status = "FAILED" if count["FAILED"] or count["KILLED"] else "FINISHED"
        end_parent(self.tracker, self.parent_run_id, status,
                   {"ragsweep.jobs": str(len(jobs)), "ragsweep.failed_jobs": str(count["FAILED"]),
                    "ragsweep.lost_jobs": str(count["KILLED"]), **front}, files)
        self.parent_run_id = None
        return jobs, count, files, table

    def _keep_per_query_of_best(self, table: pd.DataFrame) -> None:
        """Drop per_query.jsonl from every run of this sweep below its best `tracking.per_query_top` (runs it
        reused from earlier sweeps keep theirs: another sweep may rank them first)."""
        own = table.iloc[self.tracker.per_query_top:]
        if "reused" in own:
            own = own[own["reused"] != "yes"]
        self.tracker.drop_per_query(list(own["run_id"]))
        if len(own):
            log.info("kept per_query.jsonl for the best %d runs by %s; dropped it from %d others",
                     self.tracker.per_query_top, self.metric, len(own))

    def stop(self, status: str) -> str:
        """Close the runs a stop left RUNNING as KILLED, and the parent as `status` (KILLED after Ctrl-C, FAILED
        after fail_fast or an error) with a summary of what finished; return a line that says so."""
        self.tracker.kill_running_children(self.parent_run_id)
        jobs = sweep_jobs(self.tracker, self.parent_run_id)
        count = _count_by_status(jobs)
        files, _ = self._write_summary(jobs[jobs["status"] == "FINISHED"] if not jobs.empty else jobs)
        end_parent(self.tracker, self.parent_run_id, status,
                   {"ragsweep.jobs": str(len(jobs)), "ragsweep.failed_jobs": str(count["FAILED"]),
                    "ragsweep.interrupted_jobs": str(count["KILLED"])}, files)
        self.parent_run_id = None
        summary = f", summary in {files[1]}" if files else ""
        how = "interrupted" if status == "KILLED" else "the sweep stopped early"
        return (f"{how}: {count['FINISHED']} job(s) finished, {count['FAILED']} failed, {count['KILLED']} "
                f"stopped (KILLED){summary}")

    def notes(self, jobs: pd.DataFrame) -> list[str]:
        """The lines under the ranked table: which judges scored it, a tie at the top, a multi-objective
        sweep's Pareto front."""
        return [*judge_notes(jobs), *filter(None, [tie_note(jobs, self.metric), self.front_note])]

    def _tag_front(self, jobs: pd.DataFrame) -> dict[str, str]:
        """Tag each of the sweep's own finished runs `ragsweep.pareto` true or false: on the front over the
        metrics of `optimized_metric` or not. Returns the parent's tags: the metrics, their directions and the
        front's runs (a configuration reused from an earlier sweep is listed there, its run left as it was)."""
        done, on = pareto_split(jobs, self.objectives)
        for run_id, front, parent in zip(done.run_id, on, done["parent"], strict=True):
            if parent == self.parent_run_id:  # not a run an earlier sweep made, which its own front may list
                self.tracker.set_tags(run_id, {PARETO_TAG: str(bool(front)).lower()})
        directions = [registry.metric(metric).direction for metric in self.objectives]
        self.front_note = (f"Pareto front over {', '.join(f'{m} ({d})' for m, d in zip(self.objectives, directions))}"
                           f": {int(on.sum())} of {len(done)} configurations, tagged {PARETO_TAG}=true: "
                           + "; ".join(done[on]["label"]))
        ids = ",".join(done[on].run_id)
        return {f"{PARETO_TAG}.metrics": ",".join(self.objectives), f"{PARETO_TAG}.directions": ",".join(directions),
                f"{PARETO_TAG}.runs": ids if len(ids) <= MAX_TAG_CHARS else ids[:ids.rfind(",", 0, MAX_TAG_CHARS)]}

    def _write_summary(self, jobs: pd.DataFrame) -> tuple[list[Path], pd.DataFrame | None]:
        """summary.csv and summary.md in the sweep folder: `jobs` ranked by the sweep's metric, each judged run
        with its judge and that judge's AUC; summary.md also says which judge(s) scored the judged metrics."""
        self.metric = sweep_metric(self.tracker, self.parent_run_id, jobs, self.asked)
        if jobs.empty or self.metric not in metric_names(jobs):
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
        # the runs table a sweep's user wants first, `ragsweep ui` links it: its summary metrics, best first
        self.tracker.share_view(self.metric, [c for c in table.columns if c in metric_names(jobs)], self.parent_run_id)
        return files, table


def _count_by_status(jobs: pd.DataFrame) -> dict[str, int]:
    """How many of a sweep's jobs (one row per configuration) ended FINISHED, FAILED and KILLED."""
    return {status: int((jobs["status"] == status).sum()) if not jobs.empty else 0
            for status in ("FINISHED", "FAILED", "KILLED")}


def end_parent(tracker: RunStore, run_id: str, status: str, tags: dict[str, str], files: list[Path]) -> None:
    """Tag the parent run with what its jobs did, attach the summary files and close it as `status`."""
    tracker.set_tags(run_id, tags)
    tracker.attach(run_id, *files)
    tracker.finish(run_id, status)


def sweep_metric(tracker: RunStore, parent_run_id: str, jobs: pd.DataFrame, asked: str | None = None) -> str:
    """The metric a sweep's table ranks by: the optimized_metric it was given (`asked`, else its jobs' param), the
    metric it raced on (`hydra/sweeper=racing` tags its parent run), else the metric of the stage its jobs vary."""
    optimized = param("optimized_metric")
    given = set(jobs[optimized].dropna()) - {"None"} if optimized in jobs else set()
    raced = tracker.run(parent_run_id).tags.get(RACE_METRIC_TAG)
    return asked or (given.pop() if len(given) == 1 else None) or raced or default_ranking_metric(jobs)


def sweeps(tracker: RunStore, most: int | None = None) -> list[str]:
    """The experiment's sweep parent runs, newest first."""
    return [run.run_id for run in tracker.runs(tags={ROLE_TAG: "parent"}, most=most)]


def attach_to_latest_sweep(tracker: RunStore, path: Path) -> str | None:
    """Log `path` to the experiment's newest parent run; its id, or None when no sweep ran."""
    newest = sweeps(tracker, most=1)
    if not newest:
        return None
    tracker.attach(newest[0], path)
    return newest[0]
