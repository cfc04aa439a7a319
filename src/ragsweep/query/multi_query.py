"""Multi-query: the question asked n other ways, each searched, the rankings fused."""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.query.base import (GeneratedRewriter, Rewrite, ask_for_lists, check_count, check_generator,
                                 load_query_prompt, rendered, rewrites_of)


class MultiQueryRewriter(GeneratedRewriter):
    """Asks `generator` for `n` rewordings of each question (as a JSON list); retrieval searches with each (and with
    the question, with `include_question`) and fuses the rankings by reciprocal rank (LangChain's
    MultiQueryRetriever, RAG-Fusion).

    Args:
        generator: the model that rewords (a nested generator config, like the llm judge's).
        n: rewordings asked for; more that the model gives are dropped, repeats kept once.
        include_question: search with the question too.
        prompt: a shipped prompt (`multi_query`) or a YAML file with `system` and `user` holding {question} and {n}.
        retries: re-asks after an output that holds no list.
        constrained: send `response_format` (JSON object + schema); false for endpoints that reject it.
    """

    def __init__(self, generator, n: int = 3, include_question: bool = True, prompt: str = "multi_query",
                 retries: int = 1, constrained: bool = True) -> None:
        self.generator, self.n = check_generator(generator), check_count("n", n)
        self.retries = check_count("retries", retries, 0)
        self.include_question, self.constrained = bool(include_question), bool(constrained)
        self.system, self.user = load_query_prompt(prompt, "query.prompt", ("question", "n"))

    def rewrite(self, questions: Sequence[str]) -> list[Rewrite]:
        replies = ask_for_lists(self.generator, [rendered(self.system, self.user, question=q, n=self.n)
                                                 for q in questions], self.retries, self.constrained)
        return rewrites_of(questions, replies, self._texts)

    def _texts(self, question: str, reworded: list[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*([question] if self.include_question else []), *reworded[: self.n]]))
