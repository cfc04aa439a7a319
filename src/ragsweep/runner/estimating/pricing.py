"""A job's planned calls priced as its run will log them: a held call at what it took, a missing one at its
prediction (`job_estimate`), through the run's own `question_costs`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ragsweep.generation.base import Generation
from ragsweep.judging.base import Verdict
from ragsweep.metrics.costs import Call
from ragsweep.query.base import Rewrite
from ragsweep.runner.build import Pipeline
from ragsweep.runner.costing import priced_as, question_costs
from ragsweep.runner.estimating.calls import Held, Made, Planned
from ragsweep.runner.estimating.endpoints import EndpointCalls
from ragsweep.runner.estimating.estimates import JobEstimate, StageCount
from ragsweep.runner.judge_stage import Judgement

MODEL_STAGES = ("query", "generation", "judge", "relevance")  # the stages whose calls are estimated, in a job's order


def job_estimate(label: str, pipeline: Pipeline, planned: Sequence[Planned], samples: dict[str, np.ndarray],
                 questions: int, predict: Callable[[Planned], tuple[Held, bool]],
                 endpoints: EndpointCalls | None = None) -> tuple[JobEstimate, dict[str, tuple[float, int]]]:
    """The job's estimate, and the cost and number of the calls it would make anew, by cache key; `endpoints`, its
    embedder's and reranker's calls at endpoints, priced as its run prices them."""
    job = JobEstimate(label, questions, dict(endpoints.stages) if endpoints else {})
    made: dict[str, list[Made]] = {stage: [] for stage in MODEL_STAGES}
    judged: dict[str, list[list[Verdict]]] = {stage: [[] for _ in range(questions)] for stage in ("judge", "relevance")}
    missing: dict[str, tuple[float, int]] = {}
    models = priced_models(pipeline)
    for call in planned:
        count = job.stages.setdefault(call.stage, StageCount())
        count.calls += call.calls
        if call.held is not None:
            count.cached += 1
            cost = call.took()
        else:
            cost, rough = predict(call)
            count.rough |= rough
        count.prompt_tokens += cost.prompt_tokens
        count.completion_tokens += cost.completion_tokens
        (judged[call.stage][call.question] if call.stage in judged else made[call.stage]).append(_as_made(call, cost))
        if call.held is None:
            model, remote = models[call.stage]
            missing[call.key] = (pipeline.prices.of(Call(model, remote, cost.prompt_tokens, cost.completion_tokens,
                                                         cost.latency_ms / 1000)), call.calls)
    judgements = [Judgement(support=[verdicts]) for verdicts in judged["judge"]]
    costs = question_costs(pipeline, questions, samples, made["query"] or None, made["generation"] or None,
                           judgements if pipeline.plan.judges else None,
                           judged["relevance"] if pipeline.plan.judges_relevance else None,
                           endpoints.searched if endpoints else None)
    job.cost_total = float(sum(costs)) + (endpoints.passages if endpoints else 0.0)
    missing.update(endpoints.new if endpoints else {})
    job.new_cost = float(sum(cost for cost, _ in missing.values()))
    return job, missing


def priced_models(pipeline: Pipeline) -> dict[str, tuple[str | None, bool]]:
    """Each model stage's model and whether it is an endpoint (`priced_as`)."""
    stages = {"query": pipeline.query, "generation": pipeline.generator, "judge": pipeline.judge,
              "relevance": pipeline.relevance_judge}
    return {stage: priced_as(built.component) for stage, built in stages.items() if built is not None}


def _as_made(call: Planned, cost: Held) -> Made:
    """The call as `question_costs` prices it: what the cache holds, or the prediction."""
    if call.held is not None:
        return call.held
    if call.stage == "query":
        return Rewrite((), None, cost.prompt_tokens, cost.completion_tokens, cost.latency_ms)
    if call.stage in ("judge", "relevance"):
        return Verdict(0.0, "ok", "", cost.prompt_tokens, cost.completion_tokens, cost.latency_ms)  # score unused
    return Generation("", cost.latency_ms, cost.prompt_tokens, cost.completion_tokens)
