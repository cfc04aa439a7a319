"""The reranking stage's contract."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ragsweep.contract import MODEL_NAME, PREFLIGHT, PRELOAD, REMOTE, VERSION, OptionalAttribute
from ragsweep.types import Chunk, Hit


class Reranker(Protocol):
    """Reorders each question's first-stage candidates, best first.

    `candidates` is how many first-stage hits it reads (0: it is a pass-through); the runner
    keeps the top k of what it returns.
    """

    candidates: int

    def rerank(self, questions: Sequence[str], chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]]) -> list[list[Hit]]: ...


# What the engine reads on a reranker beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {
    "model_name": MODEL_NAME,
    "preflight": PREFLIGHT,
    "preload": PRELOAD,
    "remote": REMOTE,
    "request_ms": OptionalAttribute("object", "with `remote`: each question's request milliseconds in its last "
                                              "`rerank`, its rerank latency (an endpoint is not asked twice to time it)"),
    "version": VERSION,
}
