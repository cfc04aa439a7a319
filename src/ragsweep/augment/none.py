"""The default: the generator reads the retrieved chunks as they are."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragsweep.augment.base import Passage
from ragsweep.types import Chunk, Document, Hit


class NoAugmenter:
    enabled = False

    def augment(self, hits: Sequence[Sequence[Hit]], chunks: Sequence[Chunk],
                documents: Mapping[str, Document]) -> list[list[Passage]]:
        return [[Passage(chunks[hit.index].span, hit.score) for hit in query_hits] for query_hits in hits]
