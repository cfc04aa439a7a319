"""The sample of a job's questions asked before it is estimated: which questions (`spread`), how many to bring the
sweep's figures within a margin (`sample_for`), and their calls made as the run makes them (`ask`)."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

from scipy.stats import qmc

from ragsweep.runner.answer_stages import answer_questions
from ragsweep.runner.build import Pipeline
from ragsweep.runner.estimating.prediction import SCALE_FROM
from ragsweep.types import Chunk, Hit

log = logging.getLogger(__package__)  # the estimate's logger, named as when it was one module


def spread(questions: int, sample: int) -> list[int]:
    """The first `sample` positions (all, when the questions are fewer) of an order whose every beginning is spread
    evenly over the questions (van der Corput's: 0, 1/2, 1/4, 3/4, ...), so a larger sample holds a smaller one."""
    if questions <= 0 or sample <= 0:
        return []
    order = qmc.Halton(d=1, scramble=False).random(2 ** math.ceil(math.log2(questions))).ravel()  # every k/2^m
    return sorted(list(dict.fromkeys((order * questions).astype(int).tolist()))[:sample])


def sample_for(within: float, margin: float, sample: int, questions: int) -> int:
    """The sample of `questions` that brings a margin of error found with `sample` of them to `within`, as a mean's
    margin shrinks, with sqrt(1/n - 1/N): n0 / (1 + n0 / N) for n0 = (t S / within)^2 (Cochran, Sampling Techniques,
    4.4), S read off the margin found; at least `SCALE_FROM` more, at most all (with none asked yet, a margin from a
    job's own held calls: twice `SCALE_FROM`)."""
    if sample <= 0:
        return min(questions, 2 * SCALE_FROM)
    wanted = 1 / (1 / questions + (1 / sample - 1 / questions) * (within / margin) ** 2)
    return min(questions, max(sample + SCALE_FROM, math.ceil(wanted)))


def ask(pipeline: Pipeline, questions: Sequence[str], chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]]) -> None:
    """The questions' answers, the judge's calls on them and the relevance judge's, made as the run makes them (and
    cached): the job's own held calls that scale its estimate (`CallPredictor`). A failed call is not cached, so it
    stays to be predicted."""
    log.info("%s: making the calls of %d questions", pipeline.plan.label, len(questions))
    made = answer_questions(pipeline, questions, chunks, hits)
    failed_in_sample(pipeline, answers=[answer.error is not None for answer in made.generations or ()],
                     judge_calls=[not v.ok for judged in made.judgements or () for _, v in judged.calls()],
                     relevance_calls=[not v.ok for row in made.relevance or () for v in row])


def failed_in_sample(pipeline: Pipeline, **failed: Sequence[bool]) -> None:
    """A warning naming the sample's calls that failed, by stage (none failed: nothing)."""
    counts = [f"{sum(made)} of {len(made)} {stage.replace('_', ' ')}" for stage, made in failed.items() if any(made)]
    if counts:
        log.warning("%s: the sample's calls that failed (not cached: predicted like the others): %s",
                    pipeline.plan.label, ", ".join(counts))
