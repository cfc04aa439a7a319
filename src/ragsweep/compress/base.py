"""The compress stage's contract: of each question's passages, the parts worth passing on, still as spans, so the
token metrics show exactly how much of the reference survives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ragsweep.augment.base import Passage
from ragsweep.contract import ENABLED, PRELOAD, VERSION
from ragsweep.types import Document


class Compressor(Protocol):
    """Keeps parts of each question's passages (best first): spans within them, best-ranked passage first."""

    def compress(self, questions: Sequence[str], passages: Sequence[Sequence[Passage]],
                 documents: Mapping[str, Document]) -> list[list[Passage]]: ...


# What the engine reads on a compressor beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {
    "enabled": ENABLED,
    "preload": PRELOAD,
    "version": VERSION,
}
