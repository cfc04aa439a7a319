"""Decomposition: a question split into the simpler questions it needs answered, each searched, the rankings fused."""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.query.base import (GeneratedRewriter, Rewrite, ask_for_lists, check_count, check_generator,
                                 load_query_prompt, rendered, rewrites_of)


class DecomposeRewriter(GeneratedRewriter):
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
        self.generator, self.max_questions = check_generator(generator), check_count("max_questions", max_questions)
        self.retries = check_count("retries", retries, 0)
        self.include_question, self.constrained = bool(include_question), bool(constrained)
        self.system, self.user = load_query_prompt(prompt, "query.prompt", ("question", "n"))

    def rewrite(self, questions: Sequence[str]) -> list[Rewrite]:
        replies = ask_for_lists(self.generator, [rendered(self.system, self.user, question=q, n=self.max_questions)
                                                 for q in questions], self.retries, self.constrained)
        return rewrites_of(questions, replies, self._texts)

    def _texts(self, question: str, parts: list[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*([question] if self.include_question else []), *parts[: self.max_questions]]))
