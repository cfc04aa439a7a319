"""The judging stage's contract: pairs of texts in, a support probability and a status out.

A judge answers one question about a pair: does `passage` support `claim` (task "support"), or is
`passage` relevant to the question in `claim` (task "relevance")? Its `score` is a probability in
[0, 1]; a call that fails is a `Verdict` with status `parse_failed` or `error` and no score, never
an exception, a NaN or a silent 0, so the runner can count it (`judge_failure_rate`) and leave it
out of every mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ragsweep.contract import ASKS, ENABLED, PREFLIGHT, PRELOAD, VERSION, OptionalAttribute

Task = Literal["support", "relevance"]
VALIDATED_AUC = 0.6  # a judge's AUC on data it was not fitted on below this (or none) marks its numbers unvalidated
Status = Literal["ok", "parse_failed", "error"]
STATUSES: tuple[Status, ...] = ("ok", "parse_failed", "error")


@dataclass(frozen=True)
class Pair:
    """What one judge call scores: a claim (or, for relevance, the question) against a passage.
    An empty passage asks about the claim alone (the likelihood judge's baseline)."""

    claim: str
    passage: str
    task: Task = "support"


@dataclass(frozen=True)
class Verdict:
    """One judged pair: `score` in [0, 1] when `status` is ok, else None; `raw` keeps what the judge
    said (an LLM's output, an error message) so failures can be read afterwards."""

    score: float | None
    status: Status = "ok"
    raw: str = ""
    prompt_tokens: int = 0  # what a model's calls for it cost (an LLM judge's; 0 for a judge that is no LLM)
    completion_tokens: int = 0
    latency_ms: float = 0.0

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"verdict status must be one of {STATUSES}, got {self.status!r}")
        if self.status == "ok" and (self.score is None or not 0.0 <= self.score <= 1.0):
            raise ValueError(f"an ok verdict needs a score in [0, 1], got {self.score!r}")
        if self.status != "ok" and self.score is not None:
            raise ValueError("a failed verdict has no score")

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class Listed:
    """A list a judge's model wrote (an answer's claims, the questions it answers), or None when it gave no usable
    one, and what its calls cost."""

    items: list[str] | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0


class Judge(Protocol):
    """Scores pairs, one `Verdict` per pair in order.

    `threshold` is the score at which a claim counts as supported (calibrated by `ragsweep
    calibrate`); bad settings raise when the judge is built, before any work.
    """

    threshold: float

    def judge(self, pairs: Sequence[Pair]) -> list[Verdict]: ...


# What the engine reads on a judge beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {
    "generator": ASKS,
    "cached": OptionalAttribute("flag", "False: its verdicts are computed every time, never stored (default True)"),
    "model_key": OptionalAttribute("text", "what identifies the model it loads or trains, added to its cache keys so "
                                           "that two models never share verdicts (None: its settings say it all)"),
    "decompose_claims": OptionalAttribute("flag", "True: answers are split into atomic claims by the judge (cached) "
                                                  "with `decompose`, not into sentences"),
    "decompose": OptionalAttribute("method", "decompose(question, answer) -> Listed: an answer's atomic claims, asked "
                                             "when `decompose_claims` is True"),
    "questions_for": OptionalAttribute("method", "questions_for(answer) -> Listed: the questions an answer answers, "
                                                 "for answer_relevance in the RAGAS form (the llm judge)"),
    "list_max_tokens": OptionalAttribute("count", "the most tokens of a list it asks its generator for (claims, "
                                                  "questions), which `ragsweep estimate` reads to bound one"),
    "fit": OptionalAttribute("method", "fit(claims): learned from labelled claims; calibration reads its out-of-fold "
                                       "scores and `ragsweep calibrate` writes its fitted `weights` and `bias` as a "
                                       "judge option (the ensemble)"),
    "weights": OptionalAttribute("mapping", "with `fit`: member -> weight, None until fitted"),
    "bias": OptionalAttribute("number", "with `fit`: the fitted intercept"),
    "in_sample_auc": OptionalAttribute("number", "with `fit`: the AUC of its fitted weights on the claims they were "
                                                 "fitted on (None before), which `ragsweep calibrate` prints and "
                                                 "writes"),
    "aligned": OptionalAttribute("method", "aligned(claims) -> judge: a trained judge trained again with people's "
                                           "labelled claims, which `ragsweep align-judge` measures"),
    "align_epochs": OptionalAttribute("count", "with `aligned`: passes over the labelled claims, which `ragsweep "
                                               "align-judge` writes into the aligned judge's option"),
    "dataset": OptionalAttribute("object", "the corpus a judge that learns from one is handed (a loader, a Dataset, "
                                           "its documents or texts; None until given): an ensemble hands its own to "
                                           "members whose is None, `ragsweep train-judge` reads the trained judge's"),
    "texts": OptionalAttribute("texts", "the passages it learns from, which `ragsweep train-judge` counts"),
    "build": OptionalAttribute("method", "build() -> Path: train its model, or find it in the cache, and return its "
                                         "folder (`ragsweep train-judge`)"),
    "enabled": ENABLED,
    "preflight": PREFLIGHT,
    "preload": PRELOAD,
    "version": VERSION,
}


def check_threshold(threshold: float) -> None:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0:
        raise ValueError(f"judge.threshold must be a number in [0, 1], got {threshold!r}")
