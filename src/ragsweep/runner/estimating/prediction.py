"""The tokens and milliseconds of a call the cache lacks, predicted from the held calls of the same stage and model
(`CallPredictor`): their rates (`Rates`), scaled by what a job's own held calls took against them (`Scaled`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ragsweep.runner.estimating.calls import Held, Planned

SCALE_FROM = 8  # a job's own held calls of a model from which its missing ones are scaled (`CallPredictor`)


@dataclass(frozen=True)
class Observed:
    """A held call of a job (its position in the sweep) and of a question (None: not known)."""

    job: int
    question: int | None
    held: Held


@dataclass(frozen=True)
class Rates:
    """What a stage's model was measured to take on held calls: the base of `CallPredictor`'s predictions."""

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


class CallPredictor:
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
    took, predicted = (figures.sum(axis=0) for figures in took_and_predicted(rates, own))
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


def took_and_predicted(rates: Rates, own: Sequence[Observed]) -> tuple[np.ndarray, np.ndarray]:
    """What each held call took and what `rates` predict for it (calls x prompt tokens, completion tokens, ms)."""
    took = np.array([(seen.held.prompt_tokens, seen.held.completion_tokens, seen.held.latency_ms) for seen in own],
                    dtype=float).reshape(len(own), 3)
    predicted = np.array([rates.predict(seen.held.characters, seen.question, 1) for seen in own],
                         dtype=float).reshape(len(own), 3)
    return took, predicted
