"""Answer metrics: a generated answer against a question's reference answers.

Exact match and F1 are the SQuAD v1.1 definitions, as its official evaluation script computes them
(Rajpurkar et al. 2016, `evaluate-v1.1.py`): both strings are lower-cased, punctuation is removed,
the articles a/an/the are removed and whitespace is collapsed; F1 is the harmonic mean of precision
and recall of the shared tokens (a multiset intersection); a question's score is the maximum over
its reference answers.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

import numpy as np

ANSWER_METRICS = ("answer_exact_match", "answer_f1", "answer_similarity", "answer_correctness")
_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CITATIONS = re.compile(r"\s*\[\d+\]")


def strip_citations(answer: str) -> str:
    """The answer without `[n]` passage citations (prompt qa_cite), so they count neither for nor against it."""
    return _CITATIONS.sub("", answer).strip()


def normalize_answer(text: str) -> str:
    """SQuAD v1.1: lower case, drop punctuation, drop articles, collapse whitespace (in that order)."""
    text = "".join(char for char in text.lower() if char not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, reference: str) -> float:
    """1.0 when the normalised strings are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(reference))


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD v1.1 F1: with p, r the tokens of the normalised prediction and reference and
    c = |Counter(p) ∩ Counter(r)|, F1 = 2·P·R / (P + R) where P = c/|p|, R = c/|r|; 0 when c = 0
    (so also when either side normalises to nothing)."""
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(reference).split()
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def best_over_references(metric, prediction: str, references: Sequence[str]) -> float:
    """SQuAD's rule for several reference answers: the prediction's best score against any of them."""
    if not references:
        raise ValueError("a question without reference answers has no answer metric")
    return max(metric(prediction, reference) for reference in references)


def cosine_similarity(answer: np.ndarray, references: np.ndarray) -> float:
    """Highest cosine between the answer's embedding and a reference answer's (rows of `references`)."""
    answer = answer / (np.linalg.norm(answer) or 1.0)
    references = references / np.maximum(np.linalg.norm(references, axis=1, keepdims=True), 1e-12)
    return float(np.max(references @ answer))


def answer_correctness(f1: float, similarity: float, weight: float = 0.75) -> float:
    """w · answer_f1 + (1 − w) · answer_similarity: token overlap, softened by meaning (w = 0.75 default,
    the weighting RAGAS gives its factual and semantic parts of answer correctness)."""
    return weight * f1 + (1 - weight) * similarity
