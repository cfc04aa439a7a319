"""Asking a model for output a parser can read, and asking again when it cannot.

Small local models often cut their JSON short or wrap it in prose. The llm judge and `ragsweep generate`
both send the bad output back with a one-line correction and take the next answer, a few times at most; a
call that fails is not asked again. Every output is kept, so what the model said can be shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ragsweep.generation.base import Generator, Request

SEPARATOR = "\n--- re-asked ---\n"  # between the outputs of one ask's calls in `Reply.raw`
NO_ANSWER = "the generator returned no answer"

T = TypeVar("T")
Messages = tuple[dict[str, str], ...]


@dataclass(frozen=True)
class Reply(Generic[T]):
    """What came of one ask: every call's output, the last output's parse and the failed call's error."""

    raw: str  # the outputs in order, joined by SEPARATOR; a failed call's error in place of its output
    parsed: T | None  # what `read` made of the last output (None if no call answered)
    error: str | None  # why the last call failed; None when every call answered
    prompt_tokens: int = 0  # summed over the ask's calls
    completion_tokens: int = 0
    milliseconds: float = 0.0


def ask_until_parsed(generator: Generator, conversations: Sequence[Messages], retries: int,
                     request: Callable[[int, Messages], Request], read: Callable[[int, str], T],
                     usable: Callable[[T], bool], correction: Callable[[int], str]) -> list[Reply[T]]:
    """Send every conversation, then re-ask those whose output is not `usable`, at most `retries` times.

    Each round sends the asks still pending in one `generate` call. A re-ask is the conversation so far
    plus the unusable output (as the assistant's turn) and `correction(i)` (as the user's); a failed call
    ends its ask.

    Args:
        generator: The model to ask.
        conversations: The chat messages of each ask.
        retries: Re-asks after an unusable output (>= 0).
        request: The request for ask i and its messages so far.
        read: Ask i's parse of an output.
        usable: Whether a parse is the answer wanted (otherwise the ask is re-asked).
        correction: What the user says to ask i after an unusable output.

    Returns:
        One `Reply` per conversation, in order.
    """
    messages = list(conversations)
    raws: list[list[str]] = [[] for _ in messages]
    parsed: list[T | None] = [None] * len(messages)
    errors: list[str | None] = [None] * len(messages)
    spending = [[0, 0, 0.0] for _ in messages]  # prompt tokens, completion tokens, milliseconds
    pending = list(range(len(messages)))
    for attempt in range(retries + 1):
        made = generator.generate([request(i, messages[i]) for i in pending])
        again = []
        for i, generation in zip(pending, made, strict=True):
            spending[i][0] += generation.prompt_tokens
            spending[i][1] += generation.completion_tokens
            spending[i][2] += generation.latency_ms
            if generation.error is not None or generation.answer is None:
                errors[i] = generation.error or NO_ANSWER
                raws[i].append(errors[i])
                continue
            raws[i].append(generation.answer)
            parsed[i] = read(i, generation.answer)
            if not usable(parsed[i]) and attempt < retries:
                messages[i] = (*messages[i], {"role": "assistant", "content": generation.answer},
                               {"role": "user", "content": correction(i)})
                again.append(i)
        pending = again
        if not pending:
            break
    return [Reply(SEPARATOR.join(raw), result, error, *spent)
            for raw, result, error, spent in zip(raws, parsed, errors, spending, strict=True)]
