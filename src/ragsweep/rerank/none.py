"""The default: keep the first-stage order."""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.types import Chunk, Hit


class NoReranker:
    candidates = 0

    def rerank(self, questions: Sequence[str], chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]]) -> list[list[Hit]]:
        return [list(query_hits) for query_hits in hits]
