"""A fast baseline judge: how much of a claim's content the passage contains, word for word.

It reads no meaning (a paraphrase scores low, a negation of a passage sentence scores high), so its
AUC on the shipped hard negatives is near chance; it is here as the floor every other judge must beat
and as a judge that costs nothing.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from ragsweep.judging.base import Pair, Verdict, check_threshold

_WORD = re.compile(r"[a-z]+|\d+(?:[.,]\d+)*")


def content_terms(text: str, stem: int = 6) -> tuple[set[str], set[str]]:
    """(words, numbers) of `text`: lower-cased words of 3+ letters that are not stop words, cut to their
    first `stem` letters (so "accession" and "accessions" match), and numbers with separators removed."""
    words, numbers = set(), set()
    for token in _WORD.findall(text.lower()):
        if token[0].isdigit():
            numbers.add(token.replace(",", ""))
        elif len(token) >= 3 and token not in ENGLISH_STOP_WORDS:
            words.add(token[:stem])
    return words, numbers


def coverage(claim: str, passage: str, number_weight: float = 2.0) -> float:
    """Share of the claim's content terms found in the passage, a number counting `number_weight` words
    (a changed number is one term, but the one that matters). A claim with no content terms scores 1."""
    claim_words, claim_numbers = content_terms(claim)
    passage_words, passage_numbers = content_terms(passage)
    total = len(claim_words) + number_weight * len(claim_numbers)
    if total == 0:
        return 1.0
    found = len(claim_words & passage_words) + number_weight * len(claim_numbers & passage_numbers)
    return found / total


@dataclass(frozen=True)
class TermWeights:
    """Inverse document frequency of each content term (`content_terms`, words and numbers alike) over
    `window`-character pieces of a corpus: idf(t) = ln((N + 1) / (df(t) + 0.5)), N pieces, df(t) those holding t
    (BM25's idf, Robertson & Zaragoza 2009, kept positive); a term of no piece weighs as the rarest one seen.
    Pieces, not documents: a corpus may be a few long documents."""

    idf: dict[str, float]
    unseen: float

    @classmethod
    def from_texts(cls, texts: Iterable[str], window: int = 1000) -> TermWeights:
        frequency: Counter[str] = Counter()
        pieces = 0
        for text in texts:
            for start in range(0, max(len(text), 1), window):
                words, numbers = content_terms(text[start:start + window])
                frequency.update(words | numbers)
                pieces += 1
        idf = {term: math.log((pieces + 1) / (count + 0.5)) for term, count in frequency.items()}
        return cls(idf, math.log((pieces + 1) / 0.5))

    def coverage(self, claim: str, passage: str) -> float:
        """Share of the claim's content terms found in the passage, each weighted by its idf: sum of idf(t) over
        the shared terms / sum of idf(t) over the claim's. Rare words (names, figures) count most, so a passage
        sharing only a corpus's common words scores low. A claim with no content terms scores 1."""
        claim_words, claim_numbers = content_terms(claim)
        passage_words, passage_numbers = content_terms(passage)
        terms = claim_words | claim_numbers
        total = sum(self.idf.get(term, self.unseen) for term in terms)
        if total == 0:
            return 1.0
        return sum(self.idf.get(term, self.unseen) for term in terms & (passage_words | passage_numbers)) / total


class LexicalJudge:
    """Content-word and number coverage of the claim (or, for relevance, the question) by the passage.

    Args:
        threshold: Coverage at which a claim counts as supported.
        number_weight: How many words a number counts for (> 0).
    """

    cached = False  # cheaper to recompute than to read from disk

    def __init__(self, threshold: float = 0.5, number_weight: float = 2.0) -> None:
        check_threshold(threshold)
        if isinstance(number_weight, bool) or not isinstance(number_weight, (int, float)) or number_weight <= 0:
            raise ValueError(f"judge.number_weight must be a number > 0, got {number_weight!r}")
        self.threshold, self.number_weight = float(threshold), float(number_weight)

    def judge(self, pairs: Sequence[Pair]) -> list[Verdict]:
        return [Verdict(coverage(pair.claim, pair.passage, self.number_weight)) for pair in pairs]
