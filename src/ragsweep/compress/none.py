"""The default: passages are passed on whole."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragsweep.augment.base import Passage
from ragsweep.types import Document


class NoCompressor:
    enabled = False

    def compress(self, questions: Sequence[str], passages: Sequence[Sequence[Passage]],
                 documents: Mapping[str, Document]) -> list[list[Passage]]:
        return [list(row) for row in passages]
