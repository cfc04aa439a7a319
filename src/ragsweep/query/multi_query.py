"""Multi-query: the question asked n other ways, each searched, the rankings fused."""

from __future__ import annotations

from ragsweep.query.base import ListRewriter


class MultiQueryRewriter(ListRewriter):
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
        super().__init__(generator, n, "n", include_question, prompt, retries, constrained)
