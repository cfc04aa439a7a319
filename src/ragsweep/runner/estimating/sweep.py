"""A sweep's estimate (`SweepEstimator`): each point's planned calls, priced together, so every held call predicts
every job's missing ones; a sample of each job's questions grown until the sweep's figures are known closely."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable

from omegaconf import DictConfig, OmegaConf

from ragsweep.identity import config_label
from ragsweep.runner.build import Pipeline, build
from ragsweep.runner.estimating.estimates import SweepEstimate
from ragsweep.runner.estimating.intervals import INTERVALS, moved_by_draws, percentiles
from ragsweep.runner.estimating.job_calls import JobCalls, claim_size, per_answer, planned_calls
from ragsweep.runner.estimating.prediction import CallPredictor
from ragsweep.runner.estimating.pricing import job_estimate
from ragsweep.runner.estimating.sampling import sample_for
from ragsweep.runner.plan import plan_job

log = logging.getLogger(__package__)  # the estimate's logger, named as when it was one module


class SweepEstimator:
    """Visits each point of a sweep (`preflight.check_command_line`'s `visit`), then prices them together, so
    every held call predicts every job's missing ones."""

    def __init__(self, sample: int = 0, plan: Callable[[Pipeline, int], JobCalls] | None = None) -> None:
        self._points: list[tuple[str, Pipeline, JobCalls]] = []
        self._sample = sample
        self._plan = plan or planned_calls  # a job's calls, those of a sample of its questions made first

    def visit(self, point: list[str], cfg: DictConfig) -> None:
        pipeline = build(plan_job(cfg))
        named = OmegaConf.select(cfg, "hydra.job.override_dirname")  # as the job's run will be named
        self.add(config_label(named if named is not None else ",".join(point), None, None), pipeline,
                 self._plan(pipeline, self._sample))

    def add(self, label: str, pipeline: Pipeline, calls: JobCalls) -> None:
        """A job's planned calls, priced with the others' in `estimate`."""
        self._points.append((label, pipeline, calls))

    def estimate(self) -> SweepEstimate:
        """Every job priced; where a job's missing calls are scaled by its own held ones (a sample's), its tokens',
        its cost's and the sweep's new cost's 95% intervals over `INTERVAL_DRAWS` bootstrap draws of the held calls'
        questions (tokens and costs are linear in the ratios: each draw moves them by the ratios' change times what
        the scaled calls take and cost at ratio 1)."""
        claims: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for _, _, job in self._points:
            for group, sizes in job.claims.items():
                claims[group] += sizes
        sizes = {group: claim_size(known) for group, known in claims.items()}
        planned = [[per_answer(call, *sizes.get(call.group, (None, 0.0))) if call.per_claim else call
                    for call in job.planned] for _, _, job in self._points]
        predictor = CallPredictor()
        for position, calls in enumerate(planned):
            for call in calls:
                if call.held is not None:
                    predictor.observe(call.group, call.took(), position, call.question)
        jobs, new, owner = [], {}, {}
        for position, (label, pipeline, job) in enumerate(self._points):
            estimate, missing = job_estimate(label, pipeline, planned[position], job.samples, job.questions,
                                             lambda call, at=position: predictor.predict(call, at), job.endpoints)
            jobs.append(estimate)
            new.update(missing)
            owner.update(dict.fromkeys(missing, position))
        scaled = predictor.scaled()
        if not scaled:
            return SweepEstimate(jobs, *_sums(new), sample=self._sample)
        moved, moved_new = moved_by_draws(scaled, [pipeline for _, pipeline, _ in self._points], planned, jobs, owner)
        for position in sorted({position for _, position in scaled}):
            jobs[position].intervals = {name: percentiles(jobs[position].total(name) + moved[:, position, figure])
                                        for figure, name in enumerate(INTERVALS)}
        total, count = _sums(new)
        estimate = SweepEstimate(jobs, total, count, percentiles(total + moved_new), sample=self._sample)
        estimate.intervals = {name: percentiles(estimate.total(name) + moved[:, :, figure].sum(axis=1))
                              for figure, name in enumerate(INTERVALS)}
        return estimate

    def narrowed(self, within: float) -> SweepEstimate:
        """The estimate, its sample grown until each of the sweep's figures is known within ±`within` (`margin`) or
        every question is asked. A sample's questions stay cached, so a larger one asks only the new ones, and the
        sweep reuses them all: knowing its cost closely costs nothing twice, only sooner."""
        estimate = self.estimate()
        questions = max((job.questions for job in estimate.jobs), default=0)
        while (margin := estimate.margin()) is not None and margin > within and self._sample < questions:
            self._sample = sample_for(within, margin, self._sample, questions)
            log.info("the sweep's figures known within ±%.1f%%: asking %d questions of each job", 100 * margin,
                     self._sample)
            self._points = [(label, pipeline, self._plan(pipeline, self._sample))
                            for label, pipeline, _ in self._points]
            estimate = self.estimate()
        return estimate


def _sums(new: dict[str, tuple[float, int]]) -> tuple[float, int]:
    """The new calls' cost and number (a prompt several jobs ask counts once)."""
    return float(sum(cost for cost, _ in new.values())), sum(calls for _, calls in new.values())
