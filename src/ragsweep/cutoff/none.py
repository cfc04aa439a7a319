"""The default: every one of the top k hits is passed on."""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.types import Hit


class NoCutoff:
    enabled = False

    def cut(self, hits: Sequence[Sequence[Hit]]) -> list[list[Hit]]:
        return [list(query_hits) for query_hits in hits]
