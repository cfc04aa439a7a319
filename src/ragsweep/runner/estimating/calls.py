"""A model call as the estimate keeps it: what a held one took (`Held`), one a job makes (`Planned`)."""

from __future__ import annotations

from dataclasses import dataclass

from ragsweep.generation.base import Generation
from ragsweep.judging.base import Listed, Verdict
from ragsweep.query.base import Rewrite

Made = Rewrite | Generation | Verdict | Listed  # a call as the stage cache keeps it


@dataclass(frozen=True)
class Held:
    """What one call took, as the cache keeps it: its prompt's characters, tokens and milliseconds."""

    characters: int
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float


@dataclass(frozen=True)
class Planned:
    """One call a job makes: its stage, the prediction group of its model, its cache key, the characters its
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
