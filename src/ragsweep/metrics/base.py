"""The metrics group's contract: what the runner reads of the evaluator `conf/metrics/` builds
(`metrics.evaluate.SpanEvaluator`), so an evaluator of another class is scored the same way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ragsweep.contract import PRELOAD, VERSION
from ragsweep.embedding.base import Embedder
from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Chunk, Dataset, Hit, Span


class Evaluator(Protocol):
    """Scores a job's ranked chunks against the reference spans, and its answers against the reference answers.

    `answer_embedder` is the embedder of `answer_similarity` (None: not scored), which the judge stage also embeds
    answers with; `tokenizer` counts a question's tokens for its cost.
    """

    answer_embedder: Embedder | None
    tokenizer: Tokenizer

    def score(self, dataset: Dataset, chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]], k: int,
              passages: Sequence[Sequence[Span]] | None = None) -> list[dict]: ...

    def score_answers(self, answers: Sequence[str | None], references: Sequence[Sequence[str]]) -> list[dict]: ...


# What the engine reads on an evaluator beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {
    "preload": PRELOAD,
    "version": VERSION,
}
