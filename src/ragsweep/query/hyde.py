"""HyDE: a hypothetical answer passage searched with in place of, or beside, the question."""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.generation.base import Request
from ragsweep.generation.reask import Reply
from ragsweep.query.base import GeneratedRewriter, Rewrite, check_generator, load_query_prompt, rendered, rewrites_of

MODES = ("replace", "beside")


class HydeRewriter(GeneratedRewriter):
    """Asks `generator` to write a passage that answers each question (Gao et al. 2022, "Precise Zero-Shot Dense
    Retrieval without Relevance Labels"); retrieval searches with that passage in place of the question
    (`replace`) or with both, their rankings fused by reciprocal rank (`beside`). A passage that reads like the
    corpus lies nearer its answer than the question does; a wrong one leads retrieval astray, which `beside`
    hedges.

    Args:
        generator: the model that writes the passage (a nested generator config, like the llm judge's).
        mode: `replace` or `beside`.
        prompt: a shipped prompt (`hyde`) or a YAML file with `system` and `user` holding {question}.
    """

    def __init__(self, generator, mode: str = "replace", prompt: str = "hyde") -> None:
        if mode not in MODES:
            raise ValueError(f"query.mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.generator, self.mode = check_generator(generator), mode
        self.system, self.user = load_query_prompt(prompt, "query.prompt", ("question",))

    def rewrite(self, questions: Sequence[str]) -> list[Rewrite]:
        made = self.generator.generate([Request(q, (), rendered(self.system, self.user, question=q)) for q in questions])
        replies = [Reply(generation.answer or "", (generation.answer or "").strip() or None, generation.error,
                         generation.prompt_tokens, generation.completion_tokens, generation.latency_ms)
                   for generation in made]
        return rewrites_of(questions, replies, self._texts)

    def _texts(self, question: str, passage: str) -> tuple[str, ...]:
        return (question, passage) if self.mode == "beside" else (passage,)
