"""The sentence compressor keeps the sentences a real embedder finds closest to the question, within its budget,
as spans of the passages they came from."""

from __future__ import annotations

import pytest

from ragsweep.augment.base import Passage
from ragsweep.compress.sentences import SentenceCompressor
from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Document, Span
from tests.conf_options import compose_option, instantiate_group

TEXT = ("The weather in spring is mild and wet. Paris is the capital city of France. "
        "Cheese and bread are sold at every market.\n\nThe river Seine flows through Paris on its way to the sea.")
DOCUMENTS = {"d": Document("d", TEXT)}
CAPITAL = Span("d", TEXT.index("Paris is"), TEXT.index("France.") + len("France."))


@pytest.fixture(scope="module")
def embedder():
    return instantiate_group(compose_option("embedder", "static", "embedder.progress=false"), "embedder")


def test_a_small_budget_keeps_the_sentence_closest_to_the_question(embedder):
    passages = [[Passage(Span("d", 0, len(TEXT)), 0.7)]]
    (kept,) = SentenceCompressor(embedder, max_tokens=12).compress(["What is the capital of France?"], passages,
                                                                   DOCUMENTS)
    assert kept == [Passage(CAPITAL, 0.7)]


def test_kept_sentences_stay_in_order_and_those_next_to_each_other_join(embedder):
    whole = Span("d", 0, len(TEXT))
    (everything,) = SentenceCompressor(embedder, max_tokens=1000).compress(["Paris"], [[Passage(whole, 1.0)]],
                                                                           DOCUMENTS)
    assert everything == [Passage(whole, 1.0)]  # every sentence fits: the passage, whole
    budget = 30
    (some,) = SentenceCompressor(embedder, max_tokens=budget).compress(["Which river flows through Paris?"],
                                                                       [[Passage(whole, 1.0)]], DOCUMENTS)
    spans = [passage.span for passage in some]
    assert spans == sorted(spans) and all(whole.start <= s.start < s.end <= whole.end for s in spans)
    tokens = Tokenizer()
    assert sum(tokens.count(TEXT[s.start:s.end]) for s in spans) <= budget
    assert any(TEXT[s.start:s.end].startswith("The river Seine") for s in spans)


def test_passages_keep_their_rank_and_score_and_a_sentence_over_budget_is_kept_alone(embedder):
    first, second = Span("d", CAPITAL.start, len(TEXT)), Span("d", 0, CAPITAL.start - 1)
    (kept,) = SentenceCompressor(embedder, max_tokens=1).compress(
        ["capital of France"], [[Passage(first, 0.9), Passage(second, 0.4)]], DOCUMENTS)
    assert kept == [Passage(CAPITAL, 0.9)]


def test_a_budget_must_be_positive(embedder):
    with pytest.raises(ValueError, match="compress.max_tokens must be a positive integer"):
        SentenceCompressor(embedder, max_tokens=0)
