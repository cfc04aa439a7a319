"""A generator ragsweep does not ship: `generate(question, passages) -> str`, or a callable of the same."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ragsweep.generation.base import Generation, Request


class OwnGenerator:
    """Wraps `component`, answering each request from its question and retrieved passages (in rank order).

    A question whose call raises becomes a Generation with `error` set (counted in
    `generation_error_rate`, never scored as a wrong answer). Answers are cached under `name` and
    `version` and the passages it was given (see OwnChunker).
    """

    def __init__(self, component: Any = None, name: str | None = None, version: str | None = None) -> None:
        if component is None:
            raise ValueError("generator: OwnGenerator wraps a generator: pass it to "
                             "ragsweep.Evaluation().run(generator=...), or give generator.component a _target_ "
                             "in your own YAML (--config-dir)")
        self.answer = getattr(component, "generate", component)
        if not callable(self.answer):
            raise ValueError(f"generator: {type(component).__name__} has no generate(question, passages)")
        self.component, self.name, self.version = component, name, version

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        made = []
        for request in requests:
            started = time.perf_counter()
            try:
                answer, error = str(self.answer(request.question, list(request.passages))), None
            except Exception as failure:  # one question's failure is counted, not fatal
                answer, error = None, f"{type(failure).__name__}: {failure}"
            made.append(Generation(answer, 1000 * (time.perf_counter() - started), error=error))
        return made
