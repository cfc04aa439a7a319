"""The default: each question is searched as it is."""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.query.base import Rewrite


class NoRewriter:
    enabled = False

    def rewrite(self, questions: Sequence[str]) -> list[Rewrite]:
        return [Rewrite((question,)) for question in questions]
