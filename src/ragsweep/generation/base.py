"""The generation stage's contract: a request (question, passages, rendered prompt) in, an answer out.

A generator never raises for one failed question: the failure is returned as a `Generation` whose
`error` says what went wrong, so the runner can count it (`generation_error_rate`) instead of
scoring it as a wrong answer or a NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ragsweep.contract import ENABLED, MODEL_NAME, PREFLIGHT, PRELOAD, REMOTE, VERSION, OptionalAttribute


@dataclass(frozen=True)
class Request:
    """What a generator answers from: the question, the retrieved passages in rank order, and the
    chat messages the prompt template rendered from them (what an LLM is sent)."""

    question: str
    passages: tuple[str, ...]
    messages: tuple[dict[str, str], ...]
    response_format: dict | None = None  # constrained output, e.g. {"type": "json_object", "schema": {...}}


@dataclass(frozen=True)
class Generation:
    """One answer, or the error that prevented it, with what it cost when it was generated."""

    answer: str | None
    latency_ms: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"latency_ms": self.latency_ms, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "error": self.error}


class Generator(Protocol):
    """Answers requests, one `Generation` per request in order; a failed request is a `Generation`
    with `error` set, never an exception (bad settings still raise when the generator is built)."""

    def generate(self, requests: Sequence[Request]) -> list[Generation]: ...


# What a generator can be asked for beyond free text (its `gives`), and how a refusal names it.
JSON = "json"
CAPABILITIES = {JSON: "JSON to a schema (a request's response_format)"}
# What the engine reads on a generator beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {
    "gives": OptionalAttribute("texts", "what it can be asked for beyond free text (`CAPABILITIES`; none: free "
                                        "text only), which a component whose prompts need one checks when built"),
    "max_tokens": OptionalAttribute("count", "the answer's token budget, which `ragsweep generate` reads to size its "
                                             "questions"),
    "model_name": MODEL_NAME,
    "remote": REMOTE,
    "enabled": ENABLED,
    "preflight": PREFLIGHT,
    "preload": PRELOAD,
    "version": VERSION,
}


def check_positive(value: object, key: str, allow_zero: bool = False) -> None:
    """Settings are checked when the generator is built, before any work; the message names the key."""
    low = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"generator.{key} must be an integer >= {low}, got {value!r}")


def check_local_model_settings(n_ctx: int, max_tokens: int, temperature: float, seed: int, repeat_penalty: float,
                               threads: int | None) -> None:
    """The settings a model run in the job's own process shares (llama_cpp, transformers), checked when built."""
    check_positive(n_ctx, "n_ctx")
    check_positive(max_tokens, "max_tokens")
    check_positive(seed, "seed", allow_zero=True)
    if threads is not None:
        check_positive(threads, "threads")
    if not 0 <= temperature <= 2:
        raise ValueError(f"generator.temperature must be between 0 and 2, got {temperature}")
    if not repeat_penalty > 0:
        raise ValueError(f"generator.repeat_penalty must be > 0 (1.0 = none), got {repeat_penalty}")


def check_gives(generator: object, capability: str, asker: str, choices: str = "llama_cpp, transformers or openai",
                instead: str = "") -> None:
    """Refuse, when built (so before any work), a model that cannot give what `asker`'s prompts need, in one line
    naming the setting to change. A nested generator's settings are named `generator=`, as the runner words them
    for the group holding it (`runner.errors.in_group`: `query/generator=`, `judge/generator=`)."""
    if capability in getattr(generator, "gives", ()):
        return
    raise ValueError(f"{asker} asks its model for {CAPABILITIES[capability]}, which {type(generator).__name__} "
                     f"cannot give; choose generator={choices}{instead}")
