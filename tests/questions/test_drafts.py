"""The pure parts of question generation: sampling, the draft's parse and schema, the mix and the filters."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest

from ragsweep.questions import filters
from ragsweep.questions.drafts import QUESTION_PATTERN, check_mix, next_wanted, parse_draft, schema_for
from ragsweep.questions.sampling import attempt_order, quotas
from ragsweep.types import Span


def test_quotas_follow_length_and_cover_every_document():
    # 12 in all: one each, the other 9 by length (6.69, 2.23, 0.07), the one left to the largest remainder
    assert quotas({"long": 9000, "mid": 3000, "short": 100}, 4) == {"long": 8, "mid": 3, "short": 1}
    assert sum(quotas({"a": 1, "b": 1, "c": 1}, 5).values()) == 15
    assert quotas({"a": 10, "b": 0}, 1) == {"a": 1, "b": 1}  # every document at least once
    with pytest.raises(ValueError, match="questions_per_document"):
        quotas({"a": 1}, 0)


def test_attempts_spread_over_the_document_and_are_seeded():
    order = attempt_order(12, 3, seed=0, doc_id="d")
    assert sorted(order) == list(range(12))  # every passage, once
    assert sorted(i * 3 // 12 for i in order[:3]) == [0, 1, 2]  # the first round: one from each third
    assert order == attempt_order(12, 3, seed=0, doc_id="d")
    assert order != attempt_order(12, 3, seed=1, doc_id="d")


def test_a_draft_is_read_tolerantly():
    raw = ('Sure! ```json\n{"Question": "Who built it?", "excerpts": "Ann built it.", "answer": "Ann", '
           '"type": "Factual", "difficulty": "impossible"}\n```')
    draft, reason = parse_draft(raw, "reasoning", "hard")
    assert (draft.question, draft.excerpts, draft.answer, draft.type, draft.difficulty) == \
        ("Who built it?", ("Ann built it.",), "Ann", "factual", "hard")
    assert "difficulty 'impossible' read as 'hard'" in reason
    assert parse_draft('{"excerpts": ["a"], "question": "Who?", "answer": "An', "factual", "easy") == \
        (None, "truncated JSON (the 'answer' value is cut off)")
    assert parse_draft('{"excerpts": [], "question": "Who?", "answer": "Ann"}', "factual", "easy")[1] == "no excerpts"
    assert parse_draft("I cannot help with that.", "factual", "easy") == (None, "no JSON object")


def test_the_schema_allows_only_the_passages_sentences_and_a_question():
    passage = 'Ann built the mill in 1820. It burned down. "Never again," she said. Nobody rebuilt it!'
    items = schema_for(passage, True)["properties"]["excerpts"]["items"]
    assert items["enum"] == ["Ann built the mill in 1820.", "It burned down.", "Nobody rebuilt it!"]
    assert "enum" not in schema_for(passage, False)["properties"]["excerpts"]["items"]
    assert re.match(QUESTION_PATTERN, "When did Ann build the mill?")
    for not_a_question in ("Ann built the mill in 1820.", "What? Why?", 'What is "it"?'):
        assert not re.match(QUESTION_PATTERN, not_a_question)
    json.dumps(schema_for(passage, True))


def test_the_mix_is_approached_whatever_is_dropped():
    shares = check_mix({"factual": 3, "summary": 1}, ("factual", "reasoning", "summary"), "types")
    assert shares == {"factual": 0.75, "summary": 0.25}
    achieved = Counter()
    for _ in range(8):
        achieved[next_wanted(shares, achieved)] += 1
    assert achieved == {"factual": 6, "summary": 2}
    assert next_wanted(shares, Counter(factual=5)) == "summary"
    with pytest.raises(ValueError, match="types.opinion"):
        check_mix({"opinion": 1}, ("factual",), "types")
    with pytest.raises(ValueError, match="positive sum"):
        check_mix({"factual": 0}, ("factual",), "types")


def test_excerpt_relevance_is_the_worst_excerpt():
    question = np.array([1.0, 0.0])
    assert filters.excerpt_relevance(question, np.array([[1.0, 0.0], [0.0, 1.0]])) == pytest.approx(0.0)
    assert filters.excerpt_relevance(question, np.array([[2.0, 0.0]])) == pytest.approx(1.0)


def test_duplicates_are_judged_against_questions_kept_before():
    assert filters.nearest_kept(np.array([1.0, 0.0]), np.zeros((0, 2))) == (0.0, None)
    similarity, position = filters.nearest_kept(np.array([1.0, 1.0]), np.array([[0.0, 1.0], [1.0, 0.9]]))
    assert position == 1 and similarity == pytest.approx(0.9986, abs=1e-4)


def test_the_round_trip_finds_an_overlapping_chunk():
    references = [Span("a", 100, 150)]
    assert filters.round_trip_rank([Span("a", 0, 100), Span("b", 100, 150), Span("a", 149, 300)], references) == 3
    assert filters.round_trip_rank([Span("a", 0, 100), Span("a", 150, 200)], references) is None  # touching is not sharing


def test_answerability_counts_supported_claims():
    assert filters.supported_share([[0.2, 0.9], [0.1, 0.3]], 0.5) == 0.5
    assert filters.supported_share([], 0.5) == 0.0


def test_llama_cpp_turns_the_schema_into_a_grammar():
    """llama-cpp-python falls back to unconstrained JSON, silently, when it cannot convert a schema (a
    `(?:` group did), and llama.cpp crashes on a grammar it converted wrongly (a `"` in an enum did)."""
    from llama_cpp.llama_grammar import LlamaGrammar, SchemaConverter

    passage = 'Ann said "no" in 1820. The mill \\ burned. It was rebuilt in 1858 with oak.'
    for constrained in (True, False):
        schema = schema_for(passage, constrained)
        converter = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
        converter.visit(schema, "")  # raises where from_json_schema's caller would fall back
        LlamaGrammar.from_string(converter.format_grammar(), verbose=False)
    assert schema_for(passage, True)["properties"]["excerpts"]["items"]["enum"] == ["It was rebuilt in 1858 with oak."]
