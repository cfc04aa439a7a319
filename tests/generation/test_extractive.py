"""The extractive generator: answers only with retrieved text, the sentence closest to the question."""

from __future__ import annotations

import pytest

from ragsweep.embedding.minilm import MiniLMEmbedder
from ragsweep.generation.base import Request
from ragsweep.generation.extractive import ExtractiveGenerator
from ragsweep.generation.prompts import load_prompt

PASSAGES = (
    "The harbour froze early that winter. Ships waited outside for weeks.",
    "The bridge was opened in 1932 by the mayor. It carries eight lanes of traffic.",
)


@pytest.fixture(scope="module")
def embedder():
    return MiniLMEmbedder(progress=False)


def _request(question: str, passages=PASSAGES) -> Request:
    return Request(question, passages, load_prompt("qa").render(question, passages))


def test_the_answer_is_the_retrieved_sentence_closest_to_the_question(embedder):
    made = ExtractiveGenerator(embedder).generate([_request("When was the bridge opened?")])[0]
    assert made.answer == "The bridge was opened in 1932 by the mayor."
    assert made.error is None and made.latency_ms > 0 and made.prompt_tokens == 0


def test_every_sentence_of_the_answer_comes_from_a_passage(embedder):
    generator = ExtractiveGenerator(embedder, max_sentences=2)
    made = generator.generate([_request("What happened to the ships in the frozen harbour?")])[0]
    first, second = made.answer.split(". ", 1)
    assert first + "." in PASSAGES[0] and second in " ".join(PASSAGES)
    assert first.startswith("Ships waited") or first.startswith("The harbour froze")


def test_no_passage_text_is_an_error_not_an_empty_answer(embedder):
    made = ExtractiveGenerator(embedder).generate([_request("Anything?", passages=("   ",))])[0]
    assert made.answer is None and "no retrieved text" in made.error


def test_max_sentences_must_be_positive(embedder):
    with pytest.raises(ValueError, match="generator.max_sentences"):
        ExtractiveGenerator(embedder, max_sentences=0)
