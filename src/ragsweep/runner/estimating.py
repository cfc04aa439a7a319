"""What a sweep's jobs will ask their models and spend, before they run: `ragsweep estimate` and `budget`.

Each job is taken as far as its model calls: its chunks and rankings are made (and cached, as the job itself
would make them), and the cache keys of its rewrites and answers computed. A call the stage cache holds counts the
tokens and seconds it took, as the run will log it; a call it lacks is predicted by `Calibration` from the calls
of the same stage and model that it holds, or, with none held, from the prompt's cl100k tokens and the generator's
`max_tokens` (a bound: marked rough). No model is asked and nothing of the estimate is stored. A question whose
rewrite is not cached is searched as asked, so its answer's prompt holds passages of the same size. The relevance
judge's calls are estimated as answers are; the answer judge's are not yet (its calls depend on the answer's claims).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from omegaconf import DictConfig, OmegaConf

from ragsweep.data.base import load_once
from ragsweep.generation.base import Generation, Request
from ragsweep.identity import config_label
from ragsweep.judging.base import Pair, Verdict
from ragsweep.metrics.costs import Call
from ragsweep.query.base import Rewrite
from ragsweep.runner.build import Pipeline, build
from ragsweep.runner.context import passed_on
from ragsweep.runner.errors import ConfigError
from ragsweep.runner.costing import priced_as, question_costs
from ragsweep.runner.generating import answer_requests, unpack_generation
from ragsweep.runner.relevance import relevance_pairs
from ragsweep.runner.verdicts import unpack_verdict, verdict_keys
from ragsweep.runner.plan import plan_job
from ragsweep.runner.rewriting import rewrite_keys, unpack_rewrite
from ragsweep.runner.scoring import latency_samples
from ragsweep.runner.stages import chunk_dataset, ranked_in_shards
from ragsweep.runner.whole_retrieval import whole_retrieval_in_shards
from ragsweep.tokenizer import Tokenizer

log = logging.getLogger(__name__)

MODEL_STAGES = ("query", "generation", "relevance")  # the stages whose calls are estimated, in a job's order
Made = Rewrite | Generation | Verdict  # a call as the stage cache keeps it
_TOKENIZER = Tokenizer()


@dataclass(frozen=True)
class Held:
    """What one call took, as the cache keeps it: its prompt's characters, tokens and milliseconds."""

    characters: int
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float


class Calibration:
    """Predicts a call the cache lacks from the held calls of the same stage and model (its `group`).

    prompt tokens = the prompt's characters x the held calls' prompt tokens per character (the ratio of their sums:
    a line fitted to prompts of a few lengths extrapolates worse, 11% under on sotu_qa's k=5 prompts from its k=3
    ones, against 1% over), completion tokens the held calls' mean, milliseconds by `_milliseconds`. With no
    call held: the prompt's cl100k tokens, `max_tokens` completion tokens and no seconds, marked rough.
    """

    def __init__(self) -> None:
        self._held: dict[str, list[Held]] = defaultdict(list)

    def observe(self, group: str, held: Held) -> None:
        self._held[group].append(held)

    def predict(self, call: Planned) -> tuple[Held, bool]:
        """The call's predicted tokens and milliseconds, and whether the prediction is rough."""
        held = self._held.get(call.group)
        if not held:
            return Held(call.characters, call.cl100k_tokens, int(call.max_tokens or 0) if call.tokens else 0, 0.0), True
        characters = sum(h.characters for h in held)
        prompt = max(round(call.characters * sum(h.prompt_tokens for h in held) / max(characters, 1)), 1)
        completion = round(float(np.mean([h.completion_tokens for h in held])))
        return Held(call.characters, prompt, completion, _milliseconds(held, prompt, completion)), False


def _milliseconds(held: Sequence[Held], prompt: int, completion: int) -> float:
    """a x prompt tokens + b x completion tokens, a and b fitted by least squares on the held calls (a local
    model reads a prompt token in a fraction of the time it writes one); their mean time when no such fit
    holds (too few calls, tokens that do not vary, a negative rate)."""
    tokens = np.array([[h.prompt_tokens, h.completion_tokens] for h in held], dtype=float)
    milliseconds = np.array([h.latency_ms for h in held])
    if len(held) >= 2 and np.linalg.matrix_rank(tokens) == 2:
        (reading, writing), *_ = np.linalg.lstsq(tokens, milliseconds, rcond=None)
        if reading >= 0 and writing >= 0:
            return float(reading * prompt + writing * completion)
    return float(milliseconds.mean())


@dataclass(frozen=True)
class Planned:
    """One call a job makes: its stage, the calibration group of its model, its cache key, the characters its
    prompt grows with (and their cl100k tokens, for a call to make), and what the cache holds for it (None: the
    call is still to be made)."""

    stage: str
    group: str
    key: str
    characters: int
    cl100k_tokens: int
    held: Made | None
    max_tokens: int | None
    tokens: bool  # whether its component names a model, whose calls count tokens (extractive answers: none)
    question: int | None = None  # a relevance call's question (rewrites and answers: one a question, in order)


@dataclass
class StageCount:
    """A job's calls of one stage: how many, how many the cache holds, their tokens."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rough: bool = False


@dataclass
class JobEstimate:
    """One job's expected calls per stage and its cost as its run will log it (`cost_total`: every call, cached
    or not), what of it is new spending (`new_cost`: calls the cache lacks), and the stages left out."""

    label: str
    questions: int
    stages: dict[str, StageCount] = field(default_factory=dict)
    cost_total: float = 0.0
    new_cost: float = 0.0
    left_out: list[str] = field(default_factory=list)


@dataclass
class SweepEstimate:
    """Every job's estimate; `new_cost` counts each missing call once, as the sweep makes it once (a second
    job asking the same prompt finds it cached)."""

    jobs: list[JobEstimate]
    new_cost: float
    new_calls: int


class SweepEstimator:
    """Visits each point of a sweep (`preflight.check_command_line`'s `visit`), then prices them together, so
    every held call calibrates every job's missing ones."""

    def __init__(self) -> None:
        self._points: list[tuple[str, Pipeline, list[Planned], dict[str, np.ndarray], int]] = []

    def visit(self, point: list[str], cfg: DictConfig) -> None:
        pipeline = build(plan_job(cfg))
        planned, samples, questions = planned_calls(pipeline)
        named = OmegaConf.select(cfg, "hydra.job.override_dirname")  # as the job's run will be named
        self._points.append((config_label(named if named is not None else ",".join(point), None, None), pipeline,
                             planned, samples, questions))

    def estimate(self) -> SweepEstimate:
        calibration = Calibration()
        for _, _, planned, _, _ in self._points:
            for call in planned:
                if call.held is not None:
                    calibration.observe(call.group, _held(call))
        jobs, new = [], {}
        for label, pipeline, planned, samples, questions in self._points:
            job, missing = _job_estimate(label, pipeline, planned, samples, questions, calibration)
            jobs.append(job)
            new.update(missing)
        return SweepEstimate(jobs, float(sum(new.values())), len(new))


class Budget:
    """The `budget` setting: when a sweep sets it, its points are estimated before it starts, and a sweep whose
    new calls would cost more stops there, having started nothing."""

    def __init__(self) -> None:
        self.limit: float | None = None
        self._estimator = SweepEstimator()

    def visit(self, point: list[str], cfg: DictConfig) -> None:
        limit = cfg.get("budget")
        if limit is None:
            return
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit >= 0:
            raise ConfigError(f"budget={limit!r}: give the money a sweep may spend on new model calls, a number >= 0 "
                              "in the currency of prices.models (or null for no limit)")
        self.limit = float(limit)
        self._estimator.visit(point, cfg)

    def problem(self) -> str | None:
        """Why the sweep may not start (None: no budget, or its estimate is within it)."""
        if self.limit is None:
            return None
        spent = self._estimator.estimate()
        if spent.new_cost <= self.limit:
            log.info("budget=%g: the sweep's %d new model calls should cost about %.3g", self.limit, spent.new_calls,
                     spent.new_cost)
            return None
        return (f"budget={self.limit:g}: the sweep's {spent.new_calls} new model calls would cost about "
                f"{spent.new_cost:.3g} (ragsweep estimate with the same arguments shows each job's); raise budget or "
                "narrow the grid")


def planned_calls(pipeline: Pipeline) -> tuple[list[Planned], dict[str, np.ndarray], int]:
    """The job's rewrites and answers, each with what the cache holds for it; its search and rerank
    milliseconds (what its cost counts of retrieval); its number of questions."""
    dataset = load_once(pipeline.dataset)
    questions = [query.text for query in dataset.queries]
    shards = [(0, len(questions))]
    planned: list[Planned] = []
    seconds: dict[str, float] = {}
    if pipeline.plan.whole_retriever:
        chunks, hits, search_ms, _, _ = whole_retrieval_in_shards(pipeline, dataset, questions, shards)
        rerank_ms = np.zeros(0)
    else:
        chunks, chunks_key = chunk_dataset(pipeline, dataset)
        rewrites = None
        if pipeline.query is not None:
            rewriting = _rewrites(pipeline, questions)
            planned += rewriting
            rewrites = [call.held if call.held is not None else Rewrite((question,))
                        for call, question in zip(rewriting, questions, strict=True)]
        _, hits, search_ms, rerank_ms, _ = ranked_in_shards(pipeline, chunks, chunks_key, questions, shards,
                                                            seconds, rewrites)
    context = passed_on(pipeline, questions, chunks, hits, dataset.documents)
    if pipeline.generator is not None:
        requests, keys = answer_requests(pipeline, questions, context.chunks, context.hits)
        planned += _answers(pipeline, requests, keys)
    if pipeline.relevance_judge is not None:
        planned += _relevance(pipeline, *relevance_pairs(pipeline, questions, context.chunks, context.hits))
    return planned, latency_samples(search_ms, rerank_ms), len(questions)


def _rewrites(pipeline: Pipeline, questions: Sequence[str]) -> list[Planned]:
    group = f"query {pipeline.query.signature}"
    max_tokens = getattr(getattr(pipeline.query.component, "generator", None), "max_tokens", None)
    tokens = priced_as(pipeline.query.component)[0] is not None
    return [_planned("query", group, key, question, _held_by(pipeline, "rewrites", key, unpack_rewrite), max_tokens,
                     tokens) for question, key in zip(questions, rewrite_keys(pipeline, questions), strict=True)]


def _answers(pipeline: Pipeline, requests: Sequence[Request], keys: Sequence[str]) -> list[Planned]:
    group = f"generation {pipeline.generator.signature}"
    max_tokens = getattr(pipeline.generator.component, "max_tokens", None)
    tokens = priced_as(pipeline.generator.component)[0] is not None
    return [_planned("generation", group, key, "".join(message["content"] for message in request.messages),
                     _held_by(pipeline, "answers", key, unpack_generation), max_tokens, tokens)
            for request, key in zip(requests, keys, strict=True)]


def _relevance(pipeline: Pipeline, pairs: Sequence[Pair], counts: Sequence[int]) -> list[Planned]:
    """The relevance judge's calls, one a (question, passage) pair, each marked with its question's position."""
    judge = pipeline.relevance_judge
    group = f"relevance {judge.signature}"
    max_tokens = getattr(getattr(judge.component, "generator", None), "max_tokens", None)
    tokens = priced_as(judge.component)[0] is not None
    cached = getattr(judge.component, "cached", True)
    owners = [position for position, count in enumerate(counts) for _ in range(count)]
    return [replace(_planned("relevance", group, key, pair.claim + pair.passage,
                             _held_by(pipeline, "verdicts", key, unpack_verdict) if cached else None, max_tokens,
                             tokens), question=owner)
            for pair, key, owner in zip(pairs, verdict_keys(judge, pairs), owners, strict=True)]


def _held_by(pipeline: Pipeline, stage: str, key: str, unpack: Callable[[dict], Made]) -> Made | None:
    entry = pipeline.cache.peek(stage, key)
    return unpack(entry) if entry is not None else None


def _planned(stage: str, group: str, key: str, text: str, held: Made | None, max_tokens: int | None,
             tokens: bool) -> Planned:
    """The call, keeping its prompt's size, not its text (a sweep's prompts would fill memory)."""
    counted = _TOKENIZER.count(text) if held is None and tokens else 0
    return Planned(stage, group, key, len(text), counted, held, max_tokens, tokens)


def _held(call: Planned) -> Held:
    made = call.held
    return Held(call.characters, made.prompt_tokens, made.completion_tokens, made.latency_ms)


def _job_estimate(label: str, pipeline: Pipeline, planned: Sequence[Planned], samples: dict[str, np.ndarray],
                  questions: int, calibration: Calibration) -> tuple[JobEstimate, dict[str, float]]:
    """The job's estimate, and the cost of each call it would make anew, by cache key."""
    job = JobEstimate(label, questions)
    made: dict[str, list[Made]] = {stage: [] for stage in MODEL_STAGES}
    judged: list[list[Verdict]] = [[] for _ in range(questions)]
    missing: dict[str, float] = {}
    for call in planned:
        count = job.stages.setdefault(call.stage, StageCount())
        count.calls += 1
        if call.held is not None:
            count.cached += 1
            cost = _held(call)
        else:
            cost, rough = calibration.predict(call)
            count.rough |= rough
        count.prompt_tokens += cost.prompt_tokens
        count.completion_tokens += cost.completion_tokens
        (judged[call.question] if call.stage == "relevance" else made[call.stage]).append(_as_made(call, cost))
        if call.held is None:
            model, remote = priced_as({"query": pipeline.query, "generation": pipeline.generator,
                                       "relevance": pipeline.relevance_judge}[call.stage].component)
            missing[call.key] = pipeline.prices.of(Call(model, remote, cost.prompt_tokens, cost.completion_tokens,
                                                        cost.latency_ms / 1000))
    costs = question_costs(pipeline, questions, samples, made["query"] or None, made["generation"] or None,
                           None, judged if pipeline.relevance_judge is not None else None)
    job.cost_total = float(sum(costs))
    job.new_cost = float(sum(missing.values()))
    job.left_out = ["judge"] if pipeline.judge is not None and pipeline.generator is not None else []
    return job, missing


def _as_made(call: Planned, cost: Held) -> Made:
    """The call as `question_costs` prices it: what the cache holds, or the prediction."""
    if call.held is not None:
        return call.held
    if call.stage == "query":
        return Rewrite((), None, cost.prompt_tokens, cost.completion_tokens, cost.latency_ms)
    if call.stage == "relevance":
        return Verdict(0.0, "ok", "", cost.prompt_tokens, cost.completion_tokens, cost.latency_ms)  # score unused
    return Generation("", cost.latency_ms, cost.prompt_tokens, cost.completion_tokens)
