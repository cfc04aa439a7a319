"""The llm judge's parser on outputs models really give: wrapped, fenced, cut off, chatty, contradictory."""

from __future__ import annotations

import pytest

from ragsweep.judging.parsing import parse_choice, parse_list, parse_yes_no

RELEVANCE = {"A": 1.0, "B": 0.5, "C": 0.0}


@pytest.mark.parametrize(("raw", "expected"), [
    ('{"verdict": "YES"}', 1.0),
    ('{ "verdict": "NO"}', 0.0),                                    # SmolLM2 under the JSON grammar
    ('```json\n{"verdict": "NO"}\n```', 0.0),                      # code fence with a language tag
    ('```\n{"verdict": "yes"}', 1.0),                               # fence never closed
    ('Sure! Here is my verdict:\n{"verdict": "Yes"}\nLet me know if you need more.', 1.0),
    ('{"verdict": "YES"', 1.0),                                     # closing brace cut off: the value is whole
    ('{"verdict": "NO", "reason": "the passage never mentions', 0.0),  # cut off after the verdict
    ('{"verdict": "YE', None),                                      # cut off inside the verdict: no guess
    ('{"verdict": "NO', None),                                      # could have been "NOT SURE"
    ('{"verdict": ', None),
    ("{'verdict': 'no'}", 0.0),                                     # Python dict, not JSON
    ('{"verdict": true}', 1.0),
    ('{"supported": false, "explanation": "1950 is not 1932"}', 0.0),
    ('{"score": "0.8"}', 0.8),                                      # a probability as a string
    ('{"score": 1.7}', None),                                       # outside [0, 1]
    ('{"reasoning": "the dates match"}', None),                     # one key, but no verdict in it
    ('{"foo": 1, "bar": 2}', None),                                 # no verdict key
    ('{"verdict": "YES"}\n{"verdict": "NO"}', None),                # two objects that disagree
    ("yes.", 1.0),
    ("Yes", 1.0),
    ("NO!", 0.0),
    ('"YES"', 1.0),
    ("Supported", 1.0),
    ("Not supported", 0.0),
    ("NOT_SUPPORTED", 0.0),
    ("unsupported", 0.0),
    ("true", 1.0),
    ("False.", 0.0),
    ("1", 1.0),
    ("0", 0.0),
    ("0.8", 0.8),
    ('"0.25"', 0.25),
    ("80%", 0.8),
    ("7", None),
    ("The passage supports the claim that the Harbour Bridge was opened in 1932.", 1.0),  # SmolLM2, free text
    ("No. The passage does not support the claim: it says 1932, not 1950.", 0.0),
    ("Answer: YES", 1.0),
    ("Yes, the dates match... no, wait, they differ.", None),      # contradictory: no guess
    ("I cannot tell from the passage.", None),
    ("", None),
    ("   \n ", None),
    ("```YES```", 1.0),
])
def test_support_verdicts(raw, expected):
    parsed = parse_yes_no(raw)
    assert parsed.value == expected, parsed.reason
    assert parsed.ok == (expected is not None) and parsed.reason


@pytest.mark.parametrize(("raw", "reason"), [
    ('{"verdict": "YE', "truncated"), ("yes ... no", "contradictory"), ("", "empty"),
    ('{"verdict": "YES"}{"verdict": "NO"}', "contradictory"), ("5", "outside [0, 1]"),
])
def test_failures_say_why(raw, reason):
    assert reason in parse_yes_no(raw).reason


@pytest.mark.parametrize(("raw", "expected"), [
    ("A", 1.0),
    ("(b)", 0.5),
    ("Answer: C", 0.0),
    ("C.", 0.0),
    ("B) partly relevant", 0.5),
    ("The answer is (B).", 0.5),
    ('{"answer": "C"}', 0.0),
    ('```json\n{"answer": "b"}\n```', 0.5),
    ('{"answer": "A) answers it"}', 1.0),
    ("0.5", 0.5),
    ("A passage about taxes is not relevant.", None),               # the article "A", not a choice
    ("(A) or (C)", None),                                           # two letters: no guess
    ("D", None),
    ('{"answer": "', None),
    ("", None),
])
def test_relevance_choices(raw, expected):
    parsed = parse_choice(raw, RELEVANCE)
    assert parsed.value == expected, parsed.reason


@pytest.mark.parametrize(("raw", "expected"), [
    ('{"claims": ["The bridge opened in 1932.", "It has eight lanes."]}',
     ["The bridge opened in 1932.", "It has eight lanes."]),
    ('["Q1?", "Q2?"]', ["Q1?", "Q2?"]),
    ('```json\n{"questions": ["When did it open?"]}\n```', ["When did it open?"]),
    ('Here you go: {"statements": ["a", ""]} done', ["a"]),        # empty items dropped
    ('{"claims": ["The bridge opened in 1932.", "It has eig', ["The bridge opened in 1932."]),  # cut item dropped
    ('{"claims": []}', None),
    ('{"verdict": "YES"}', None),
    ("The bridge opened in 1932. It has eight lanes.", None),
    ("", None),
])
def test_lists(raw, expected):
    assert parse_list(raw) == expected
