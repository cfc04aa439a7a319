"""What a sweep's jobs will ask their models and spend, before they run: `ragsweep estimate` and `budget`.

Each job is taken as far as its model calls: its chunks and rankings are made (and cached, as the job itself
would make them), and the cache keys of its rewrites and answers computed. A call the stage cache holds counts the
tokens and seconds it took, as the run will log it; a call it lacks is predicted by `Calibration` from the calls
of the same stage and model that it holds, or, with none held, from the prompt's cl100k tokens and the generator's
`max_tokens` (a bound: marked rough). No model is asked, unless a `sample` of questions is to be asked first (their
calls cached, as the run would make them, and the job's other calls scaled by them, with a 95% interval; grown,
given a margin the sweep's figures must be known within), and nothing of the estimate is stored. A question
whose rewrite is not cached is searched as asked, so its answer's prompt holds passages of the same size. The
judges' calls are estimated as answers are; an answer still to be made is taken to have as many claims as the
known ones.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from omegaconf import DictConfig, OmegaConf
from scipy import stats
from scipy.stats import qmc

from ragsweep.data.base import load_once
from ragsweep.generation.base import Generation, Request
from ragsweep.identity import config_label
from ragsweep.judging.base import Listed, Pair, Verdict
from ragsweep.metrics.costs import Call
from ragsweep.runner.answer_stages import answer_questions
from ragsweep.query.base import Rewrite
from ragsweep.runner.build import Built, Pipeline, build
from ragsweep.runner.context import passed_on
from ragsweep.runner.errors import ConfigError
from ragsweep.runner.costing import priced_as, question_costs
from ragsweep.runner.generating import answer_requests, unpack_generation
from ragsweep.runner.judge_stage import Judgement, held_claims, judge_lists, unpack_listed
from ragsweep.runner.relevance import relevance_pairs
from ragsweep.runner.verdicts import unpack_verdict, verdict_keys
from ragsweep.runner.plan import plan_job
from ragsweep.runner.ranking import rank_questions
from ragsweep.runner.rewriting import rewrite_keys, rewritten, unpack_rewrite
from ragsweep.runner.scoring import latency_samples
from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Chunk, Hit

log = logging.getLogger(__name__)

MODEL_STAGES = ("query", "generation", "judge", "relevance")  # the stages whose calls are estimated, in a job's order
CLAIMS_UNKNOWN = 3  # claims an answer is taken to have when no judged answer is known to count them
SCALE_FROM = 8  # a job's own held calls of a model from which its missing ones are scaled (`Calibration`)
INTERVAL_DRAWS = 1000  # bootstrap draws of the questions whose calls scale an estimate (`Scaled.drawn`)
INTERVALS = ("prompt_tokens", "completion_tokens", "cost_total")  # a scaled job's figures given a 95% interval
Made = Rewrite | Generation | Verdict | Listed  # a call as the stage cache keeps it
_TOKENIZER = Tokenizer()


@dataclass(frozen=True)
class Held:
    """What one call took, as the cache keeps it: its prompt's characters, tokens and milliseconds."""

    characters: int
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float


@dataclass(frozen=True)
class Observed:
    """A held call of a job (its position in the sweep) and of a question (None: not known)."""

    job: int
    question: int | None
    held: Held


@dataclass(frozen=True)
class Rates:
    """What a stage's model was measured to take on held calls: the base of `Calibration`'s predictions."""

    tokens_per_character: float
    completion_tokens: float  # a call's mean
    by_question: dict[int, float]  # a question's calls' mean completion tokens, where it has held ones
    reading_ms: float | None  # per prompt token; None: no fit, a call takes `call_ms`
    writing_ms: float | None  # per completion token
    call_ms: float  # a call's mean

    @classmethod
    def of(cls, observed: Sequence[Observed]) -> Rates:
        """The held calls' prompt tokens per character (the ratio of their sums), mean completion tokens (overall and
        per question) and mean milliseconds, and the milliseconds per prompt and per completion token fitted by least
        squares (a local model reads a prompt token in a fraction of the time it writes one), when such a fit holds
        (two calls or more, tokens that vary, no negative rate)."""
        held = [seen.held for seen in observed]
        tokens = np.array([[h.prompt_tokens, h.completion_tokens] for h in held], dtype=float)
        milliseconds = np.array([h.latency_ms for h in held])
        reading = writing = None
        if len(held) >= 2 and np.linalg.matrix_rank(tokens) == 2:
            (a, b), *_ = np.linalg.lstsq(tokens, milliseconds, rcond=None)
            if a >= 0 and b >= 0:
                reading, writing = float(a), float(b)
        characters = sum(h.characters for h in held)
        return cls(float(tokens[:, 0].sum()) / max(characters, 1), float(tokens[:, 1].mean()),
                   _completions_by_question(observed), reading, writing, float(milliseconds.mean()))

    def predict(self, characters: int, question: int | None, calls: int) -> tuple[float, float, float]:
        """A call's prompt tokens, completion tokens (its question's held calls' mean, else all calls' mean) and
        milliseconds (of `calls` calls together, their prompts' characters summed)."""
        prompt = characters * self.tokens_per_character
        completion = self.by_question.get(question, self.completion_tokens) * calls
        milliseconds = self.call_ms * calls if self.reading_ms is None else \
            self.reading_ms * prompt + self.writing_ms * completion
        return prompt, completion, milliseconds


@dataclass(frozen=True)
class Scaled:
    """`Rates` and the ratios of what a job's own held calls (`own`) took to what the rates predict for them (prompt
    and completion tokens, milliseconds): a ratio estimator, as in survey sampling (Cochran, Sampling Techniques,
    ch. 6)."""

    rates: Rates
    ratios: tuple[float, ...] = (1.0, 1.0, 1.0)
    own: Sequence[Observed] = field(default=(), compare=False)

    def predict(self, characters: int, question: int | None, calls: int) -> Held:
        prompt, completion, milliseconds = (value * ratio for value, ratio in
                                            zip(self.rates.predict(characters, question, calls), self.ratios))
        return Held(characters, round(prompt), round(completion), milliseconds)

    def drawn(self, weights: np.ndarray, questions: int) -> np.ndarray:
        """The ratios (draws x figures) over bootstrap draws of the own calls' questions (`weights`: each draw's
        weight of each question position, Poisson(1), so a question's calls count alike in every job, as a sample
        asks the same questions of each), each draw's departure from `ratios` widened (`_widening`)."""
        took, predicted = _took_and_predicted(self.rates, self.own)
        asked = [seen.question or 0 for seen in self.own]
        took_by, predicted_by = np.zeros((weights.shape[1], 3)), np.zeros((weights.shape[1], 3))  # a question's sums
        np.add.at(took_by, asked, took)
        np.add.at(predicted_by, asked, predicted)
        taking, predicting = weights @ took_by, weights @ predicted_by
        ratios = np.array(self.ratios)
        drawn_ratios = np.divide(taking, predicting, out=np.tile(ratios, (len(weights), 1)), where=predicting > 0)
        held = len({seen.question for seen in self.own})
        return ratios + (drawn_ratios - ratios) * _widening(held, questions)


class Calibration:
    """Predicts a job's call that the cache lacks from the held calls of the same stage and model (its `group`).

    The base is the other jobs' held calls (`Rates`): prompt tokens = the prompt's characters x their tokens per
    character (a line fitted to prompts of a few lengths extrapolates worse: 11% under on sotu_qa's k=5 prompts from
    its k=3 ones, against 1% over), completion tokens the same question's mean there (else all calls' mean),
    milliseconds from the fitted rates. When the job holds `SCALE_FROM` calls of its own (`ragsweep estimate
    --sample` makes them), each figure is scaled by what those calls took against what the base predicts for them,
    which follows what the base cannot see: a model writing longer answers from more passages, a machine slower
    today than when the base's calls were timed. With no other job's call held the job's own are the base (at
    their mean completion, scaled as above, so a sample's spread reaches the interval); with none at all: the
    prompt's cl100k tokens, `max_tokens` completion tokens and no seconds, marked rough.
    """

    def __init__(self) -> None:
        self._held: dict[str, list[Observed]] = defaultdict(list)
        self._scaled: dict[tuple[str, int], Scaled] = {}

    def scaled(self) -> dict[tuple[str, int], Scaled]:
        """The (group, job) pairs whose predictions so far were scaled by the job's own held calls."""
        return {key: scaled for key, scaled in self._scaled.items() if scaled.own}

    def observe(self, group: str, held: Held, job: int = 0, question: int | None = None) -> None:
        self._held[group].append(Observed(job, question, held))
        self._scaled = {key: scaled for key, scaled in self._scaled.items() if key[0] != group}

    def predict(self, call: Planned, job: int = 0) -> tuple[Held, bool]:
        """The predicted tokens and milliseconds of the job's call (of its `calls` calls together, their prompts'
        characters summed), and whether the prediction is rough."""
        observed = self._held.get(call.group)
        if not observed:
            completion = int(call.max_tokens or 0) * call.calls if call.tokens else 0
            return Held(call.characters, call.cl100k_tokens, completion, 0.0), True
        if (call.group, job) not in self._scaled:  # once per group and job: a sweep predicts many calls
            self._scaled[call.group, job] = _scaled(observed, job)
        return self._scaled[call.group, job].predict(call.characters, call.question, call.calls), False


def _widening(held: int, questions: int) -> float:
    """How much wider than the bootstrap's spread a sample of `held` of a job's `questions` questions leaves its
    total: sqrt(N / (N - n)), as the questions still to ask vary about the ratio as the held ones did, beside the
    ratio's own error (the ratio estimator's variance with its finite population correction, Cochran, Sampling
    Techniques, 6.9); sqrt(n / (n - 1)) for the bootstrap's variance of a mean, which divides by n; and Student's t
    over the normal quantile for a variance estimated from n values."""
    if held < 2:
        return 1.0
    population = math.sqrt(questions / (questions - held)) if questions > held else 1.0
    return population * math.sqrt(held / (held - 1)) * stats.t.ppf(0.975, held - 1) / stats.norm.ppf(0.975)


def _scaled(observed: Sequence[Observed], job: int) -> Scaled:
    own = [seen for seen in observed if seen.job == job]
    others = [seen for seen in observed if seen.job != job]
    if len(own) < SCALE_FROM:
        return Scaled(Rates.of(others or own))
    if others:
        # a question's mean only from the other jobs holding more questions than this one: a sample asks each job the
        # same questions, so with the other sampled jobs' calls the sample's questions would be predicted from more
        # jobs than the rest (the ratio measured on another base than the one it scales), and from calls the job
        # shares with them (two jobs' rewrites) exactly, leaving their spread out of the interval
        rates = replace(Rates.of(others), by_question=_completions_by_question(_wider(others, own)))
    else:
        # the job's own calls are the base, each question at their mean completion, so the ratios (about 1) carry the
        # spread of what the held questions took into the interval, as a mean per question does
        rates = replace(Rates.of(own), by_question={})
    took, predicted = (figures.sum(axis=0) for figures in _took_and_predicted(rates, own))
    return Scaled(rates, tuple(float(a / b) if b > 0 else 1.0 for a, b in zip(took, predicted)), own)


def _completions_by_question(observed: Sequence[Observed]) -> dict[int, float]:
    """Each question's held calls' mean completion tokens."""
    per_question: dict[int, list[int]] = defaultdict(list)
    for seen in observed:
        if seen.question is not None:
            per_question[seen.question].append(seen.held.completion_tokens)
    return {question: float(np.mean(made)) for question, made in per_question.items()}


def _wider(others: Sequence[Observed], own: Sequence[Observed]) -> list[Observed]:
    """The calls of the other jobs holding calls of more questions than `own` holds."""
    asked: dict[int, set[int | None]] = defaultdict(set)
    for seen in others:
        asked[seen.job].add(seen.question)
    held = len({seen.question for seen in own})
    return [seen for seen in others if len(asked[seen.job]) > held]


def _took_and_predicted(rates: Rates, own: Sequence[Observed]) -> tuple[np.ndarray, np.ndarray]:
    """What each held call took and what `rates` predict for it (calls x prompt tokens, completion tokens, ms)."""
    took = np.array([(seen.held.prompt_tokens, seen.held.completion_tokens, seen.held.latency_ms) for seen in own],
                    dtype=float).reshape(len(own), 3)
    predicted = np.array([rates.predict(seen.held.characters, seen.question, 1) for seen in own],
                         dtype=float).reshape(len(own), 3)
    return took, predicted


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
    question: int | None = None  # the position of the question it serves
    calls: int = 1  # more than one: the calls this one stands for, their characters summed
    per_claim: bool = False  # the judge's calls on an answer still to be made: `calls` and characters are per claim

    def took(self) -> Held:
        """What a held call took."""
        return Held(self.characters, self.held.prompt_tokens, self.held.completion_tokens, self.held.latency_ms)


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
    or not), and what of it is new spending (`new_cost`: calls the cache lacks)."""

    label: str
    questions: int
    stages: dict[str, StageCount] = field(default_factory=dict)
    cost_total: float = 0.0
    new_cost: float = 0.0
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)  # 95%, of `INTERVALS`, when scaled

    def total(self, name: str) -> float:
        """One of `INTERVALS`: the job's prompt or completion tokens (its stages' together) or its cost_total."""
        return self.cost_total if name == "cost_total" else sum(getattr(count, name) for count in self.stages.values())


@dataclass
class SweepEstimate:
    """Every job's estimate; `new_cost` counts each missing call once, as the sweep makes it once (a second
    job asking the same prompt finds it cached)."""

    jobs: list[JobEstimate]
    new_cost: float
    new_calls: int
    interval: tuple[float, float] | None = None  # new_cost's 95% interval, when a job is scaled by its own calls
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)  # the sweep's `INTERVALS`, 95%
    sample: int = 0  # the questions of each job asked first

    def total(self, name: str) -> float:
        """One of `INTERVALS` for the whole sweep: its jobs' together, as their runs will log them."""
        return sum(job.total(name) for job in self.jobs)

    def margin(self) -> float | None:
        """The widest margin of error of the sweep's figures: the farther end of a 95% interval from its figure, as a
        share of the figure (None: no figure has an interval)."""
        return max((max(high - value, value - low) / value for name, (low, high) in self.intervals.items()
                    if (value := self.total(name)) > 0), default=None)


class SweepEstimator:
    """Visits each point of a sweep (`preflight.check_command_line`'s `visit`), then prices them together, so
    every held call calibrates every job's missing ones."""

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
        sizes = {group: _claim_size(known) for group, known in claims.items()}
        planned = [[_per_answer(call, *sizes.get(call.group, (None, 0.0))) if call.per_claim else call
                    for call in job.planned] for _, _, job in self._points]
        calibration = Calibration()
        for position, calls in enumerate(planned):
            for call in calls:
                if call.held is not None:
                    calibration.observe(call.group, call.took(), position, call.question)
        jobs, new, owner = [], {}, {}
        for position, (label, pipeline, job) in enumerate(self._points):
            estimate, missing = _job_estimate(label, pipeline, planned[position], job.samples, job.questions,
                                              lambda call, at=position: calibration.predict(call, at))
            jobs.append(estimate)
            new.update(missing)
            owner.update(dict.fromkeys(missing, position))
        scaled = calibration.scaled()
        if not scaled:
            return SweepEstimate(jobs, *_sums(new), sample=self._sample)
        questions = 1 + max(call.question or 0 for calls in planned for call in calls)
        weights = np.random.default_rng(0).poisson(1.0, (INTERVAL_DRAWS, questions)).astype(float)
        moved, moved_new = np.zeros((INTERVAL_DRAWS, len(jobs), len(INTERVALS))), np.zeros(INTERVAL_DRAWS)
        for (group, position), scaling in scaled.items():
            calls = [call for call in planned[position] if call.held is None and call.group == group]
            figures, costs = _at_ratio_one(self._points[position][1], calls, scaling.rates)
            change = scaling.drawn(weights, jobs[position].questions) - np.array(scaling.ratios)
            moved[:, position] += np.column_stack([change[:, :2] * figures[:, :2].sum(axis=0),
                                                   change @ costs.sum(axis=0)])
            moved_new += change @ costs[[owner[call.key] == position for call in calls]].sum(axis=0)
        for position in sorted({position for _, position in scaled}):
            jobs[position].intervals = {name: _percentiles(jobs[position].total(name) + moved[:, position, figure])
                                        for figure, name in enumerate(INTERVALS)}
        total, count = _sums(new)
        estimate = SweepEstimate(jobs, total, count, _percentiles(total + moved_new), sample=self._sample)
        estimate.intervals = {name: _percentiles(estimate.total(name) + moved[:, :, figure].sum(axis=1))
                              for figure, name in enumerate(INTERVALS)}
        return estimate

    def narrowed(self, within: float) -> SweepEstimate:
        """The estimate, its sample grown until each of the sweep's figures is known within ±`within` (`margin`) or
        every question is asked. A sample's questions stay cached, so a larger one asks only the new ones, and the
        sweep reuses them all: knowing its cost closely costs nothing twice, only sooner."""
        estimate = self.estimate()
        questions = max((job.questions for job in estimate.jobs), default=0)
        while (margin := estimate.margin()) is not None and margin > within and self._sample < questions:
            self._sample = _sample_for(within, margin, self._sample, questions)
            log.info("the sweep's figures known within ±%.1f%%: asking %d questions of each job", 100 * margin,
                     self._sample)
            self._points = [(label, pipeline, self._plan(pipeline, self._sample))
                            for label, pipeline, _ in self._points]
            estimate = self.estimate()
        return estimate


def _sample_for(within: float, margin: float, sample: int, questions: int) -> int:
    """The sample of `questions` that brings a margin of error found with `sample` of them to `within`, as a mean's
    margin shrinks, with sqrt(1/n - 1/N): n0 / (1 + n0 / N) for n0 = (t S / within)^2 (Cochran, Sampling Techniques,
    4.4), S read off the margin found; at least `SCALE_FROM` more, at most all (with none asked yet, a margin from a
    job's own held calls: twice `SCALE_FROM`)."""
    if sample <= 0:
        return min(questions, 2 * SCALE_FROM)
    wanted = 1 / (1 / questions + (1 / sample - 1 / questions) * (within / margin) ** 2)
    return min(questions, max(sample + SCALE_FROM, math.ceil(wanted)))


def _at_ratio_one(pipeline: Pipeline, calls: Sequence[Planned], rates: Rates) -> tuple[np.ndarray, np.ndarray]:
    """Each call's prompt tokens, completion tokens and milliseconds as `rates` predict them, and what each of the
    three costs (calls x 3 both): at each ratio 1 (a prediction's figures are these times the ratios)."""
    models = _priced_models(pipeline)
    figures = np.array([rates.predict(call.characters, call.question, call.calls) for call in calls],
                       dtype=float).reshape(len(calls), 3)
    costs = []
    for call, (prompt, completion, milliseconds) in zip(calls, figures):
        model, remote = models[call.stage]
        costs.append([pipeline.prices.of(Call(model, remote, *priced)) for priced in
                      ((prompt, 0, 0.0), (0, completion, 0.0), (0, 0, milliseconds / 1000))])
    return figures, np.array(costs, dtype=float).reshape(len(calls), 3)


def _sums(new: dict[str, tuple[float, int]]) -> tuple[float, int]:
    """The new calls' cost and number (a prompt several jobs ask counts once)."""
    return float(sum(cost for cost, _ in new.values())), sum(calls for _, calls in new.values())


def _percentiles(values: Sequence[float]) -> tuple[float, float]:
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


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


@dataclass
class JobCalls:
    """A job's model calls (`planned`), its search and rerank milliseconds (what its cost counts of retrieval), its
    questions, and per judge the claims of the answers whose claims are known (count and characters of each)."""

    planned: list[Planned]
    samples: dict[str, np.ndarray]
    questions: int
    claims: dict[str, list[tuple[int, int]]]


def planned_calls(pipeline: Pipeline, sample: int = 0) -> JobCalls:
    """The job's rewrites, answers, judge's and relevance judge's calls, each with what the cache holds for it; the
    calls of `sample` questions spread over the dataset are made first (and cached, as the job's run would)."""
    dataset = load_once(pipeline.dataset)
    questions = [query.text for query in dataset.queries]
    asked_now = _spread(len(questions), sample)
    planned: list[Planned] = []
    guessed: set[int] = set()  # questions searched as asked, whose prompts and verdicts are sized, not known

    def held_rewrites(asked: Sequence[str]) -> list[Rewrite] | None:
        """The rewrites the cache holds; a question whose rewrite is missing is searched as asked."""
        if pipeline.query is None:
            return None
        _failed_in_sample(pipeline, rewrites=[made.error is not None for made in
                                              rewritten(pipeline, [asked[i] for i in asked_now]) or ()])
        rewriting = _rewrites(pipeline, asked)
        planned.extend(rewriting)
        guessed.update(position for position, call in enumerate(rewriting) if call.held is None)
        return [call.held if call.held is not None else Rewrite((question,))
                for call, question in zip(rewriting, asked, strict=True)]

    ranked = rank_questions(pipeline, dataset, questions, [(0, len(questions))], held_rewrites, {})
    context = passed_on(pipeline, questions, ranked.chunks, ranked.hits, dataset.documents)
    if asked_now:
        _ask(pipeline, [questions[i] for i in asked_now], context.chunks, [context.hits[i] for i in asked_now])
    claims: dict[str, list[tuple[int, int]]] = {}
    if pipeline.generator is not None:
        requests, keys = answer_requests(pipeline, questions, context.chunks, context.hits)
        answers = _answers(pipeline, requests, keys, guessed)
        planned += answers
        if pipeline.judge is not None:
            support, sizes = _support(pipeline, questions, [request.passages for request in requests], answers)
            planned += support
            claims[_model(pipeline.judge, "judge")[0]] = sizes
    if pipeline.relevance_judge is not None:
        planned += _relevance(pipeline, *relevance_pairs(pipeline, questions, context.chunks, context.hits), guessed)
    return JobCalls(planned, latency_samples(ranked.search_ms, ranked.rerank_ms), len(questions), claims)


def _spread(questions: int, sample: int) -> list[int]:
    """The first `sample` positions (all, when the questions are fewer) of an order whose every beginning is spread
    evenly over the questions (van der Corput's: 0, 1/2, 1/4, 3/4, ...), so a larger sample holds a smaller one."""
    if questions <= 0 or sample <= 0:
        return []
    order = qmc.Halton(d=1, scramble=False).random(2 ** math.ceil(math.log2(questions))).ravel()  # every k/2^m
    return sorted(list(dict.fromkeys((order * questions).astype(int).tolist()))[:sample])


def _ask(pipeline: Pipeline, questions: Sequence[str], chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]]) -> None:
    """The questions' answers, the judge's calls on them and the relevance judge's, made as the run makes them (and
    cached): the job's own held calls that scale its estimate (`Calibration`). A failed call is not cached, so it
    stays to be predicted."""
    log.info("%s: making the calls of %d questions", pipeline.plan.label, len(questions))
    made = answer_questions(pipeline, questions, chunks, hits)
    _failed_in_sample(pipeline, answers=[answer.error is not None for answer in made.generations or ()],
                      judge_calls=[not v.ok for judged in made.judgements or () for _, v in judged.calls()],
                      relevance_calls=[not v.ok for row in made.relevance or () for v in row])


def _failed_in_sample(pipeline: Pipeline, **failed: Sequence[bool]) -> None:
    """A warning naming the sample's calls that failed, by stage (none failed: nothing)."""
    counts = [f"{sum(made)} of {len(made)} {stage.replace('_', ' ')}" for stage, made in failed.items() if any(made)]
    if counts:
        log.warning("%s: the sample's calls that failed (not cached: predicted like the others): %s",
                    pipeline.plan.label, ", ".join(counts))


def _rewrites(pipeline: Pipeline, questions: Sequence[str]) -> list[Planned]:
    group, max_tokens, tokens = _model(pipeline.query, "query")
    return [_planned("query", group, key, question, _held_by(pipeline, "rewrites", key, unpack_rewrite), max_tokens,
                     tokens, position)
            for position, (question, key) in enumerate(zip(questions, rewrite_keys(pipeline, questions), strict=True))]


def _answers(pipeline: Pipeline, requests: Sequence[Request], keys: Sequence[str],
             guessed: Container[int]) -> list[Planned]:
    """The answers' calls; one of a question searched as asked is to be made, even if the cache holds its prompt."""
    group, max_tokens, tokens = _model(pipeline.generator, "generation")
    return [_planned("generation", group, key, "".join(message["content"] for message in request.messages),
                     None if position in guessed else _held_by(pipeline, "answers", key, unpack_generation),
                     max_tokens, tokens, position)
            for position, (request, key) in enumerate(zip(requests, keys, strict=True))]


def _relevance(pipeline: Pipeline, pairs: Sequence[Pair], counts: Sequence[int],
               guessed: Container[int]) -> list[Planned]:
    """The relevance judge's calls, one a (question, passage) pair, each marked with its question's position."""
    owners = [position for position, count in enumerate(counts) for _ in range(count)]
    return _verdict_calls(pipeline, pipeline.relevance_judge, "relevance", pairs, owners, guessed)


def _support(pipeline: Pipeline, questions: Sequence[str], passages: Sequence[Sequence[str]],
             answers: Sequence[Planned]) -> tuple[list[Planned], list[tuple[int, int]]]:
    """The answer judge's calls: its lists of each answer (`_lists`), one call a (claim, passage) pair of an answer
    whose claims are known (a held answer's sentences, or its decomposition held), else one standing for an answer's
    calls per claim (`per_claim`); and each known answer's claims (their count and characters), which size the
    others'."""
    judge = pipeline.judge
    group, max_tokens, tokens = _model(judge, "judge")
    calls, pairs, owners, sizes = _lists(pipeline, questions, answers), [], [], []
    for position, (question, texts, asked) in enumerate(zip(questions, passages, answers, strict=True)):
        answer = asked.held  # never a failed one: the cache keeps only answers made
        claims = held_claims(pipeline, question, answer.answer) if answer is not None else None
        if claims is None:  # keyed by the answer's key: jobs asking the same prompt share these calls
            calls.append(Planned("judge", group, f"{group} {asked.key}", sum(map(len, texts)), 0, None, max_tokens,
                                 tokens, position, len(texts), per_claim=True))
            continue
        sizes.append((len(claims), sum(len(claim.text) for claim in claims)))
        pairs += [Pair(claim.text, text) for claim in claims for text in texts]
        owners += [position] * (len(claims) * len(texts))
    return [*calls, *_verdict_calls(pipeline, judge, "judge", pairs, owners)], sizes


def _lists(pipeline: Pipeline, questions: Sequence[str], answers: Sequence[Planned]) -> list[Planned]:
    """The judge's list calls (`judge_stage.judge_lists`), one a list and answer, each a calibration group of its
    own, sized by the question and the answer (an answer to make: the held answers' mean characters)."""
    lists = judge_lists(pipeline)
    if not lists:
        return []
    group, max_tokens, tokens = _model(pipeline.judge, "judge")
    max_tokens = max(getattr(pipeline.judge.component, "list_max_tokens", 0), max_tokens or 0)  # as the judge asks
    known = [len(asked.held.answer) for asked in answers if asked.held is not None]
    guessed_length = round(sum(known) / len(known)) if known else 0
    calls = []
    for position, (question, asked) in enumerate(zip(questions, answers, strict=True)):
        answer = asked.held.answer if asked.held is not None else None
        if answer == "":
            continue  # the judge asks nothing about an empty answer
        for name, key_of in lists.items():
            if answer is None:
                characters = len(question) + guessed_length
                calls.append(Planned("judge", f"{group} {name}", f"{group} {name} {asked.key}", characters,
                                     characters // 4 if tokens else 0, None, max_tokens, tokens, position))
                continue
            key = key_of(question, answer)
            entry = pipeline.cache.peek("claims", key)
            calls.append(_planned("judge", f"{group} {name}", key, question + answer,
                                  unpack_listed(entry, name) if entry is not None else None, max_tokens, tokens,
                                  position))
    return calls


def _claim_size(known: Sequence[tuple[int, int]]) -> tuple[float | None, float]:
    """The known answers' mean claims an answer, and a claim's mean characters (None, 0: no answer known)."""
    if not known:
        return None, 0.0
    claims = sum(count for count, _ in known)
    return claims / len(known), sum(chars for _, chars in known) / max(claims, 1)


def _per_answer(call: Planned, mean_claims: float | None, claim_characters: float) -> Planned:
    """A `per_claim` call made whole: the answer taken to have the known answers' mean claims (`CLAIMS_UNKNOWN`
    with none known), each of the mean claim's characters, each judged against every passage."""
    claims = float(CLAIMS_UNKNOWN) if mean_claims is None else mean_claims
    characters = round(claims * (call.characters + call.calls * claim_characters))
    return replace(call, characters=characters, cl100k_tokens=characters // 4 if call.tokens else 0,
                   calls=max(round(claims * call.calls), 0), per_claim=False)


def _verdict_calls(pipeline: Pipeline, judge: Built, stage: str, pairs: Sequence[Pair], owners: Sequence[int],
                   guessed: Container[int] = ()) -> list[Planned]:
    """The judge's calls on the pairs, each of its owner's question; one of a question in `guessed` is to be made."""
    group, max_tokens, tokens = _model(judge, stage)
    cached = getattr(judge.component, "cached", True)
    return [_planned(stage, group, key, pair.claim + pair.passage,
                     _held_by(pipeline, "verdicts", key, unpack_verdict) if cached and owner not in guessed else None,
                     max_tokens, tokens, owner)
            for pair, key, owner in zip(pairs, verdict_keys(judge, pairs), owners, strict=True)]


def _model(built: Built, stage: str) -> tuple[str, int | None, bool]:
    """A stage's calibration group (its settings), the most tokens its generator writes (a generator's own, or
    that of the generator a rewriter or judge asks), and whether its calls count tokens (it names a model)."""
    asked = getattr(built.component, "generator", built.component)
    return f"{stage} {built.signature}", getattr(asked, "max_tokens", None), priced_as(built.component)[0] is not None


def _held_by(pipeline: Pipeline, stage: str, key: str, unpack: Callable[[dict], Made]) -> Made | None:
    entry = pipeline.cache.peek(stage, key)
    return unpack(entry) if entry is not None else None


def _planned(stage: str, group: str, key: str, text: str, held: Made | None, max_tokens: int | None,
             tokens: bool, question: int) -> Planned:
    """The call, keeping its prompt's size, not its text (a sweep's prompts would fill memory)."""
    counted = _TOKENIZER.count(text) if held is None and tokens else 0
    return Planned(stage, group, key, len(text), counted, held, max_tokens, tokens, question)


def _job_estimate(label: str, pipeline: Pipeline, planned: Sequence[Planned], samples: dict[str, np.ndarray],
                  questions: int, predict: Callable[[Planned], tuple[Held, bool]]
                  ) -> tuple[JobEstimate, dict[str, tuple[float, int]]]:
    """The job's estimate, and the cost and number of the calls it would make anew, by cache key."""
    job = JobEstimate(label, questions)
    made: dict[str, list[Made]] = {stage: [] for stage in MODEL_STAGES}
    judged: dict[str, list[list[Verdict]]] = {stage: [[] for _ in range(questions)] for stage in ("judge", "relevance")}
    missing: dict[str, tuple[float, int]] = {}
    models = _priced_models(pipeline)
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
                           judgements if pipeline.judge is not None and pipeline.generator is not None else None,
                           judged["relevance"] if pipeline.relevance_judge is not None else None)
    job.cost_total = float(sum(costs))
    job.new_cost = float(sum(cost for cost, _ in missing.values()))
    return job, missing


def _priced_models(pipeline: Pipeline) -> dict[str, tuple[str | None, bool]]:
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
