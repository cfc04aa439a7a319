"""The query stage's contract: each question turned into the texts retrieval searches with, whose rankings the
runner fuses by reciprocal rank. A rewrite that fails falls back to the question, and is counted."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Protocol

from ragsweep.contract import ASKS, ENABLED, PREFLIGHT, PRELOAD, VERSION
from ragsweep.generation.base import JSON, Generator, Request, check_gives
from ragsweep.generation.prompts import read_template
from ragsweep.generation.reask import Reply, ask_until_parsed
from ragsweep.judging.parsing import parse_list


@dataclass(frozen=True)
class Rewrite:
    """What one question is searched with (never empty: the question itself when its rewrite failed), why its
    rewrite failed, and the tokens and milliseconds the rewrite cost."""

    texts: tuple[str, ...]
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0


class QueryRewriter(Protocol):
    """Turns each question into the texts to search with, one `Rewrite` per question in order; a failed call is
    a `Rewrite` with `error` set and the question as its text, never an exception."""

    def rewrite(self, questions: Sequence[str]) -> list[Rewrite]: ...


# What the engine reads on a rewriter beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {
    "generator": ASKS,
    "enabled": ENABLED,
    "preflight": PREFLIGHT,
    "preload": PRELOAD,
    "version": VERSION,
}


def load_query_prompt(name: str, key: str, fields: tuple[str, ...]) -> tuple[str, str]:
    """The shipped prompt `name` (query/prompts/) or the YAML file at path `name`: its system and user messages."""
    template = read_template(resources.files(__package__).joinpath("prompts"), name, key, fields)
    return template["system"].strip(), template["user"]


def rendered(system: str, user: str, **fields: object) -> tuple[dict[str, str], ...]:
    for name, value in fields.items():
        user = user.replace("{" + name + "}", str(value))
    return {"role": "system", "content": system}, {"role": "user", "content": user}


LIST_SCHEMA = {"type": "object", "properties": {"queries": {"type": "array", "items": {"type": "string"},
                                                            "minItems": 1}}, "required": ["queries"]}
LIST_CORRECTION = 'Reply with JSON only: {"queries": ["...", "..."]}.'


def ask_for_lists(generator: Generator, conversations: Sequence[tuple[dict[str, str], ...]], retries: int,
                  constrained: bool) -> list[Reply[list[str] | None]]:
    """Each conversation's list of strings (`{"queries": [...]}`), re-asked when unreadable."""
    response_format = {"type": "json_object", "schema": LIST_SCHEMA} if constrained else None
    return ask_until_parsed(
        generator, conversations, retries,
        request=lambda i, messages: Request(messages[-1]["content"], (), messages, response_format=response_format),
        read=lambda i, text: parse_list(text, ("queries", "questions")), usable=lambda items: items is not None,
        correction=lambda i: LIST_CORRECTION)


def rewrites_of(questions: Sequence[str], replies: Sequence[Reply[Any]],
                texts: Callable[[str, Any], tuple[str, ...]]) -> list[Rewrite]:
    """One `Rewrite` per question from its reply: the texts `texts(question, parsed)` gives that hold a letter or a
    digit (a small model's "..." searches for nothing) when there are any, else the question alone with the reason."""
    made = []
    for question, reply in zip(questions, replies, strict=True):
        found = texts(question, reply.parsed) if reply.error is None and reply.parsed else ()
        found = tuple(text for text in found if any(character.isalnum() for character in text))
        error = None if found else reply.error or f"no usable rewrite in the model's output: {reply.raw[-200:]!r}"
        made.append(Rewrite(found or (question,), error, reply.prompt_tokens, reply.completion_tokens,
                            reply.milliseconds))
    return made


def check_generator(generator: Any) -> Any:
    """The rewriter's model: a built generator that generates (Hydra builds the nested `_target_`)."""
    if not callable(getattr(generator, "generate", None)) or getattr(generator, "enabled", True) is False:
        raise ValueError("query.generator must be an LLM generator (e.g. _target_: "
                         f"ragsweep.generation.llama_cpp.LlamaCppGenerator), got {type(generator).__name__}")
    return generator


def check_count(key: str, value: object, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"query.{key} must be an integer >= {low}, got {value!r}")
    return value


class GeneratedRewriter:
    """What every shipped rewriter shares: its model, made ready before any work."""

    generator: Generator

    def preflight(self) -> None:
        """Load the model (or reach its endpoint) before any work."""
        if callable(getattr(self.generator, "preflight", None)):
            self.generator.preflight()


class ListRewriter(GeneratedRewriter):
    """Asks the model for a JSON list of at most `count` texts per question (setting `count_key`), searched beside
    the question with `include_question`; repeats are kept once."""

    def __init__(self, generator, count: int, count_key: str, include_question: bool, prompt: str, retries: int,
                 constrained: bool) -> None:
        self.generator, self.count = check_generator(generator), check_count(count_key, count)
        self.retries = check_count("retries", retries, 0)
        self.include_question, self.constrained = bool(include_question), bool(constrained)
        if self.constrained:  # refused before any call: a model that writes free text would fail every rewrite
            check_gives(self.generator, JSON, "query.constrained=true", instead=", or set query.constrained=false")
        self.system, self.user = load_query_prompt(prompt, "query.prompt", ("question", "n"))

    def rewrite(self, questions: Sequence[str]) -> list[Rewrite]:
        replies = ask_for_lists(self.generator, [rendered(self.system, self.user, question=question, n=self.count)
                                                 for question in questions], self.retries, self.constrained)
        return rewrites_of(questions, replies, self._texts)

    def _texts(self, question: str, items: list[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*([question] if self.include_question else []), *items[: self.count]]))
