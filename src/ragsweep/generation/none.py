"""The default for retrieval-only sweeps: no answers, no generation metrics."""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.generation.base import Generation, Request


class NoGenerator:
    enabled = False

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        raise RuntimeError("generator=none generates nothing; the runner skips the generation stage")
