"""The answer-side stages a job's plan has (generation, judging, relevance judging): the order they run in
(`answer_questions`, which the run and the estimate's sample both follow), and what each adds to its run once it
ran: summaries beside the span metrics, files of its failed calls, and the check that fails the job when more of
its calls failed than its budget allows. A run goes through the list; a stage its plan lacks is not in it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsweep.generation.base import Generation
from ragsweep.judging.base import Verdict
from ragsweep.metrics.aggregate import summarize
from ragsweep.metrics.costs import costs_per_query
from ragsweep.runner.build import Pipeline
from ragsweep.runner.corrections import corrected_estimates
from ragsweep.runner.failures import fail_on_generation_errors, write_generation_errors
from ragsweep.runner.generating import generate
from ragsweep.runner.judge_stage import (Judgement, fail_on_judge_failures, judge_answers, run_summaries,
                                         write_failed_calls)
from ragsweep.runner.ranking import timed_stage
from ragsweep.runner.relevance import (fail_on_relevance_failures, judge_relevance, relevance_summary,
                                       warn_unvalidated_relevance, write_failed_relevance)
from ragsweep.runner.scoring import latency_metrics
from ragsweep.types import Chunk, Dataset, Hit


@dataclass(frozen=True)
class Answered:
    """What the answer-side stages made for a job's questions; a stage its plan lacks left None."""

    generations: list[Generation] | None
    judgements: list[Judgement] | None
    relevance: list[list[Verdict]] | None


def answer_questions(pipeline: Pipeline, questions: Sequence[str], passages: Sequence[Chunk],
                     passed: Sequence[Sequence[Hit]], seconds: dict[str, float] | None = None) -> Answered:
    """The answers from the passages passed on, the judge's verdicts on them and the relevance judge's on the
    passages, in that order (each cached); each stage's wall time kept in `seconds` when given."""
    timings = {} if seconds is None else seconds
    generations = timed_stage(timings, "generation", lambda: generate(pipeline, questions, passages, passed))
    judgements = timed_stage(timings, "judging",
                             lambda: judge_answers(pipeline, questions, passages, passed, generations))
    relevance = timed_stage(timings, "relevance", lambda: judge_relevance(pipeline, questions, passages, passed))
    return Answered(generations, judgements, relevance)


@dataclass(frozen=True)
class AnswerStage:
    summaries: Callable[[], dict[str, dict]]  # run-level values beside the per-question means
    failures: Callable[[Path], list[Path]]  # files of its failed calls, written in the job's folder
    check: Callable[[Mapping[str, dict], Path], None]  # raises when too many calls failed (the run's summary)


def answer_stages(pipeline: Pipeline, dataset: Dataset, generations: Sequence[Generation] | None,
                  judgements: Sequence[Judgement] | None, relevance: Sequence[Sequence[Verdict]] | None,
                  labels: Sequence[Sequence[int | None]], samples: Mapping[str, Any]) -> list[AnswerStage]:
    """The stages of the job's plan that ran, in data-flow order, with what each adds to the run."""
    plan, ids = pipeline.plan, [query.id for query in dataset.queries]
    corpora = [query.corpus for query in dataset.queries]
    bootstrap = plan.config.get("bootstrap_samples", 1000)
    stages = []
    if plan.generates and generations is not None:
        stages.append(AnswerStage(
            lambda: {**summarize(costs_per_query(generations, pipeline.evaluator.tokenizer.count), corpora, bootstrap),
                     **latency_metrics(samples, summaries=True)},
            lambda folder: write_generation_errors(folder, dataset, generations, pipeline.max_error_rate),
            lambda summary, folder: fail_on_generation_errors(generations, pipeline.max_error_rate, folder)))
    if plan.judges and judgements is not None:
        stages.append(AnswerStage(
            lambda: {**run_summaries(pipeline, judgements),
                     **(corrected_estimates(pipeline, ids, judgements) if pipeline.claim_labels else {})},
            lambda folder: write_failed_calls(folder, ids, judgements),
            lambda summary, folder: fail_on_judge_failures(judgements, pipeline.max_failure_rate, folder)))
    if plan.judges_relevance and relevance is not None:
        stages.append(AnswerStage(
            lambda: _checked_relevance(relevance_summary(labels, relevance)),
            lambda folder: write_failed_relevance(folder, ids, relevance),
            lambda summary, folder: fail_on_relevance_failures(summary, pipeline.relevance_max_failure_rate)))
    return stages


def _checked_relevance(summary: dict[str, dict]) -> dict[str, dict]:
    warn_unvalidated_relevance(summary)
    return summary
