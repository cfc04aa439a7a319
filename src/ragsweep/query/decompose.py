"""Decomposition: a question split into the simpler questions it needs answered, each searched, the rankings fused."""

from __future__ import annotations

from ragsweep.query.base import ListRewriter


class DecomposeRewriter(ListRewriter):
    """Asks `generator` for the sub-questions each question needs answered (at most `max_questions`, as a JSON
    list); retrieval searches with each (and with the question, with `include_question`) and fuses the rankings by
    reciprocal rank, so a multi-hop question finds the passage of each hop.

    Args:
        generator: the model that decomposes (a nested generator config, like the llm judge's).
        max_questions: most sub-questions kept.
        include_question: search with the question too.
        prompt: a shipped prompt (`decompose`) or a YAML file with `system` and `user` holding {question} and {n}.
        retries: re-asks after an output that holds no list.
        constrained: send `response_format` (JSON object + schema); false for endpoints that reject it.
    """

    def __init__(self, generator, max_questions: int = 3, include_question: bool = True, prompt: str = "decompose",
                 retries: int = 1, constrained: bool = True) -> None:
        super().__init__(generator, max_questions, "max_questions", include_question, prompt, retries, constrained)
