"""The augment stage's contract: each passed-on chunk widened to a span of its document, touching spans merged.

A widened passage is still a character span, so the token metrics score exactly what the generator reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple, Protocol

from ragsweep.contract import ENABLED, PRELOAD, VERSION
from ragsweep.types import Chunk, Document, Hit, Span


class Passage(NamedTuple):
    """A span passed on to the generator, and the score of the best-ranked hit it holds."""

    span: Span
    score: float


class Augmenter(Protocol):
    """Widens each question's passed-on hits (best first) into passages, best first: spans of `documents`, each
    holding the chunk it came from, none overlapping or touching another of the same question."""

    def augment(self, hits: Sequence[Sequence[Hit]], chunks: Sequence[Chunk],
                documents: Mapping[str, Document]) -> list[list[Passage]]: ...


# What the engine reads on an augmenter beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {
    "enabled": ENABLED,
    "preload": PRELOAD,
    "version": VERSION,
}


def merged(passages: Sequence[Passage]) -> list[Passage]:
    """`passages` (best first) with those of one document that overlap or touch joined into one, at the place and
    with the score of the best-ranked of them. A question has at most k passages, so comparing each with those
    before it stays small."""
    joined: list[Passage] = []
    for passage in passages:
        span = passage.span
        meeting = [position for position, kept in enumerate(joined) if kept.span.doc_id == span.doc_id
                   and kept.span.start <= span.end and span.start <= kept.span.end]
        if not meeting:
            joined.append(passage)
            continue
        start = min(span.start, *(joined[position].span.start for position in meeting))
        end = max(span.end, *(joined[position].span.end for position in meeting))
        joined[meeting[0]] = Passage(Span(span.doc_id, start, end), joined[meeting[0]].score)
        for position in reversed(meeting[1:]):
            del joined[position]
    return joined
