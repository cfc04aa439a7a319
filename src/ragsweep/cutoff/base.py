"""The cut-off stage's contract: which of a question's top-k hits are passed on, so that k becomes a maximum."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ragsweep.contract import ENABLED, PRELOAD, VERSION
from ragsweep.types import Hit


class Cutoff(Protocol):
    """Keeps, of each question's top-k hits (best first), those worth passing on, in their order."""

    def cut(self, hits: Sequence[Sequence[Hit]]) -> list[list[Hit]]: ...


# What the engine reads on a cut-off beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {
    "enabled": ENABLED,
    "preload": PRELOAD,
    "version": VERSION,
}


def kept(hits: Sequence[Sequence[Hit]], lowest: Callable[[Sequence[Hit]], float], min_hits: int) -> list[list[Hit]]:
    """Each question's hits scoring at least `lowest(its hits)`, and its first `min_hits` whatever their score."""
    cut = []
    for query_hits in hits:
        floor = lowest(query_hits)
        cut.append([hit for position, hit in enumerate(query_hits) if position < min_hits or hit.score >= floor])
    return cut


def check_min_hits(group: str, min_hits: int) -> int:
    if isinstance(min_hits, bool) or not isinstance(min_hits, int) or min_hits < 0:
        raise ValueError(f"{group}.min_hits must be an integer >= 0 (hits kept whatever their score), got {min_hits!r}")
    return min_hits
