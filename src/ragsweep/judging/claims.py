"""Answers split into the claims a judge checks, with the passages each claim cites.

By default a claim is a sentence of the answer (the split the sentence chunker uses). A `[n]`
citation (prompt `qa_cite`) belongs to the sentence it ends or sits in, and is taken out of the
claim's text, so a judge reads what the claim says, not its bookkeeping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragsweep.chunking.sentence import sentence_bounds

_CITATION = re.compile(r"\[(\d+)\]")
_ALONE = re.compile(r"^(\s*\[\d+\]\s*)+$")  # a "sentence" made only of citations: they belong to the one before


@dataclass(frozen=True)
class Claim:
    text: str
    citations: tuple[int, ...] = ()  # passage numbers, 1-based as in the prompt


def split_claims(answer: str | None) -> list[Claim]:
    """The answer's sentences as claims, each with the passage numbers it cites (in order, no repeats)."""
    if not answer or not answer.strip():
        return []
    claims: list[Claim] = []
    for start, end in sentence_bounds(answer):
        sentence = answer[start:end]
        cited = tuple(dict.fromkeys(int(number) for number in _CITATION.findall(sentence)))
        if _ALONE.match(sentence) and claims:
            last = claims[-1]
            claims[-1] = Claim(last.text, tuple(dict.fromkeys(last.citations + cited)))
            continue
        text = " ".join(_CITATION.sub("", sentence).split())
        if any(char.isalnum() for char in text):
            claims.append(Claim(text, cited))
    return claims


def claims_from_statements(statements: list[str], answer: str) -> list[Claim]:
    """Claims from an LLM's decomposition of `answer`; each statement inherits the citations of the
    answer sentence it shares the most words with (a decomposition drops the `[n]` marks)."""
    sentences = split_claims(answer)
    claims = []
    for statement in statements:
        words = set(statement.lower().split())
        best = max(sentences, key=lambda claim: len(words & set(claim.text.lower().split())), default=None)
        claims.append(Claim(" ".join(statement.split()), best.citations if best else ()))
    return [claim for claim in claims if claim.text]
