"""Answer metrics against hand-worked cases of the SQuAD v1.1 definitions (evaluate-v1.1.py)."""

from __future__ import annotations

import numpy as np
import pytest

from ragsweep.metrics.answers import (
    answer_correctness,
    best_over_references,
    cosine_similarity,
    exact_match,
    normalize_answer,
    token_f1,
)


@pytest.mark.parametrize(("text", "normalized"), [
    ("The  Cat's hat!", "cats hat"),          # lower, punctuation dropped inside words, article, spaces
    ("An apple a day", "apple day"),
    ("theater", "theater"),                   # 'the' only as a whole word
    ("A.B.C.", "abc"),                        # 'A.B.C.' loses its dots before articles are looked for
    ("  \t\n ", ""),
    ("the", ""),
    ("Über—café", "über—café"),               # the em dash is not in string.punctuation: kept, as in SQuAD
    ("$4,900 million", "4900 million"),
])
def test_normalization_follows_squad(text, normalized):
    assert normalize_answer(text) == normalized


def test_exact_match_after_normalization():
    assert exact_match("the Eiffel Tower.", "Eiffel tower") == 1.0
    assert exact_match("Eiffel Towers", "Eiffel tower") == 0.0
    assert exact_match("the", "a") == 1.0  # both normalise to "": equal strings, as the v1.1 script scores them


def test_f1_hand_worked():
    # prediction tokens: cat sat on mat (4); reference: cat on mat (3); shared 3 -> P 3/4, R 1, F1 6/7
    assert token_f1("the cat sat on the mat", "a cat on a mat") == pytest.approx(6 / 7)
    # multiset overlap: {x:2, y:1} & {x:1, y:2} = 2 tokens -> P = R = 2/3
    assert token_f1("x x y", "x y y") == pytest.approx(2 / 3)
    assert token_f1("Denver Broncos", "denver broncos!") == 1.0
    assert token_f1("Carolina Panthers", "Denver Broncos") == 0.0
    assert token_f1("", "Denver") == 0.0
    assert token_f1("the", "a") == 0.0  # no shared token: 0 in v1.1 (unlike the EM of the same pair)


def test_a_question_scores_its_best_reference():
    references = ["Denver Broncos", "Broncos", "The Broncos"]
    assert best_over_references(exact_match, "broncos", references) == 1.0
    assert best_over_references(token_f1, "Broncos win", ["Denver Broncos"]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        best_over_references(token_f1, "x", [])


def test_similarity_and_correctness():
    answer = np.array([3.0, 4.0])
    references = np.array([[0.0, 1.0], [4.0, 3.0]])  # cosines 0.8 and 0.96
    assert cosine_similarity(answer, references) == pytest.approx(0.96)
    assert answer_correctness(0.5, 0.9) == pytest.approx(0.75 * 0.5 + 0.25 * 0.9)
    assert answer_correctness(0.5, 0.9, weight=1.0) == pytest.approx(0.5)


def test_citations_are_not_scored():
    from ragsweep.metrics.answers import strip_citations

    assert strip_citations("North Carolina [1][3].") == "North Carolina."
    assert strip_citations("In 1932 [2], by the mayor [10]") == "In 1932, by the mayor"
    assert strip_citations("a [b] c") == "a [b] c"
