"""The re-ask loop the llm judge and `ragsweep generate` share, on the real SmolLM2 model in process.

What counts as parsed is decided by the test (ask 0's output always, ask 1's never), so the mechanics are
checked whatever the model says: who is re-asked, with what, how often, and what each reply keeps.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ragsweep.generation.base import Generation, Request
from ragsweep.generation.llama_cpp import LlamaCppGenerator
from ragsweep.generation.reask import SEPARATOR, ask_until_parsed

pytestmark = pytest.mark.llama_cpp

pytestmark = pytest.mark.slow
CORRECTION = "Reply with one word only."


class Recording:
    """The real generator, with the requests of each `generate` call kept."""

    def __init__(self, generator: LlamaCppGenerator) -> None:
        self.generator, self.calls = generator, []

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        self.calls.append(list(requests))
        return self.generator.generate(requests)


def _conversation(text: str) -> tuple[dict[str, str], ...]:
    return ({"role": "system", "content": "Answer in one word."}, {"role": "user", "content": text})


def _ask(generator: Recording, texts: Sequence[str], retries: int):
    return ask_until_parsed(generator, [_conversation(text) for text in texts], retries,
                            request=lambda i, messages: Request(texts[i], (), messages),
                            read=lambda i, text: (i, text), usable=lambda parsed: parsed[0] == 0,
                            correction=lambda i: CORRECTION)


def test_only_the_unparsed_ask_is_re_asked_with_its_output_and_the_correction():
    generator = Recording(LlamaCppGenerator(max_tokens=8))
    parsed, unparsed = _ask(generator, ["What colour is the sky?", "What colour is grass?"], retries=2)
    assert [len(call) for call in generator.calls] == [2, 1, 1]  # both, then ask 1 alone, twice
    first, second, third = unparsed.raw.split(SEPARATOR)  # three outputs kept, in order
    assert SEPARATOR not in parsed.raw and parsed.parsed == (0, parsed.raw)
    assert unparsed.parsed == (1, third) and unparsed.error is None and parsed.error is None
    re_asked = generator.calls[1][0].messages
    assert re_asked[:2] == _conversation("What colour is grass?")
    assert re_asked[2:] == ({"role": "assistant", "content": first}, {"role": "user", "content": CORRECTION})
    assert generator.calls[2][0].messages[4:] == ({"role": "assistant", "content": second},
                                                  {"role": "user", "content": CORRECTION})


def test_no_retries_asks_once():
    generator = Recording(LlamaCppGenerator(max_tokens=8))
    _, unparsed = _ask(generator, ["What colour is the sky?", "What colour is grass?"], retries=0)
    assert len(generator.calls) == 1 and SEPARATOR not in unparsed.raw and unparsed.parsed == (1, unparsed.raw)


def test_a_failed_call_ends_its_ask_with_its_error():
    generator = Recording(LlamaCppGenerator(n_ctx=64, max_tokens=8))
    too_long, short = _ask(generator, ["Why is the sky blue? " * 40, "What colour is grass?"], retries=1)
    assert "exceed context window" in too_long.error and too_long.raw == too_long.error
    assert too_long.parsed is None
    assert [len(call) for call in generator.calls] == [2, 1]  # the failed ask is not asked again
    assert short.error is None and short.raw.count(SEPARATOR) == 1
