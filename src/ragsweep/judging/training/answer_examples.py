"""Labelled (passage, claim) pairs from a QA dataset's reference answers and their spans.

A QA dataset (sotu_qa, SQuAD-format data) pairs each reference answer with the span that supports it,
which is supervision a support judge can learn from without anyone labelling claims: the answer stated
against the passage around its span is supported; the same statement against a passage of the same
document that misses the span (the passage a retriever ranks high for the question) is not, nor is the
statement with its number, name or answer changed, nor the span's sentence with a negation flipped
(the edits of `claim_rules`, FactCC's rules). Each unsupported claim is paired with the supported one it
differs from, as `synthetic.make_examples` pairs them, so the judge's pair loss applies unchanged.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from ragsweep.chunking.sentence import sentence_bounds
from ragsweep.judging.training.claim_rules import RULES, Corpus
from ragsweep.judging.training.synthetic import Example
from ragsweep.types import Dataset, Query

_WORD = re.compile(r"[a-z0-9]+")
_STOP = set("the a an of to in and or is was were be by for on at with as that this which what who whom whose "
            "when where why how did does do according his her their its it he she they we our from".split())


def answer_examples(dataset: Dataset, seed: int = 0) -> list[Example]:
    """Minimal (supported, unsupported) pairs for every question of `dataset` with a reference answer and span.

    Per question: (span passage, "question answer") against (a passage of the same document that misses the
    span and the answer, ranked by the words it shares with the question, "question answer"); against (span
    passage, the statement with a number or name changed, else another question's answer); and, when a
    negation applies, (span passage, the span's sentence) against (span passage, that sentence negated).
    """
    rng = random.Random(seed)
    corpus = Corpus([document.text for document in dataset.documents.values()])
    answered = [q for q in dataset.queries if q.answers and q.references
                and q.references[0].doc_id in dataset.documents]
    answers = [answer for query in answered for answer in query.answers]
    examples: list[Example] = []
    for query in answered:
        text = dataset.documents[query.references[0].doc_id].text
        bounds = [(a, b) for a, b in sentence_bounds(text) if text[a:b].strip()]
        span = query.references[0]
        inside = [i for i, (a, b) in enumerate(bounds) if a < span.end and b > span.start]
        if not inside:
            continue
        first, end = inside[0], inside[-1] + 1
        passage = _join(text, bounds[first:end])
        answer = query.answers[0]
        claim = f"{query.text.strip()} {answer.strip().rstrip('.')}."
        missed = _missed_passage(text, bounds, first, end, query, answer)
        if missed:
            examples += _pair(passage, claim, missed, claim, "qa_missed_passage", claim)
        edited = _edited_answer(claim, len(query.text.strip()), corpus, passage, rng) or _other_answer(
            claim, answer, answers, passage, rng)
        if edited:
            examples += _pair(passage, claim, passage, edited, "qa_edited_answer", claim)
        sentence = " ".join(passage.split())
        negated = RULES["negation"](sentence, corpus, passage, rng) if len(inside) == 1 else None
        if negated:
            examples += _pair(passage, sentence, passage, negated, "qa_negated_span", sentence)
    return examples


def _pair(passage: str, claim: str, other_passage: str, other_claim: str, kind: str, source: str) -> list[Example]:
    """The supported example first, then its unsupported twin, as the trained judge's pair loss expects."""
    return [Example(passage, claim, 1, "qa_span_sentence" if kind == "qa_negated_span" else "qa_answer", source),
            Example(other_passage, other_claim, 0, kind, source)]


def _missed_passage(text: str, bounds: Sequence[tuple[int, int]], first: int, end: int, query: Query,
                    answer: str) -> str | None:
    """The window of as many sentences, outside the span's and not stating the answer, sharing most content
    words with the question: a retriever's near miss."""
    width, words = end - first, _content(query.text)
    best, best_overlap = None, 0
    for start in range(0, len(bounds) - width + 1):
        if start < end and start + width > first:
            continue
        window = _join(text, bounds[start: start + width])
        if answer.lower() in window.lower():
            continue
        overlap = len(words & _content(window))
        if overlap > best_overlap:
            best, best_overlap = window, overlap
    return best


def _edited_answer(claim: str, question_end: int, corpus: Corpus, passage: str, rng: random.Random) -> str | None:
    """The statement with a number or name of its answer changed; the question part is left as asked."""
    for rule in ("number", "entity"):
        for _ in range(5):
            edited = RULES[rule](claim, corpus, passage, rng)
            if edited and edited[:question_end] == claim[:question_end]:
                return edited
    return None


def _other_answer(claim: str, answer: str, answers: Sequence[str], passage: str, rng: random.Random) -> str | None:
    """The statement with another question's answer, one the passage does not contain."""
    others = [other for other in answers if other.lower() not in passage.lower() and other != answer]
    if not others:
        return None
    return claim[: claim.rfind(answer.strip().rstrip("."))] + rng.choice(others).strip().rstrip(".") + "."


def _content(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if word not in _STOP}


def _join(text: str, bounds: Sequence[tuple[int, int]]) -> str:
    return " ".join(" ".join(text[a:b].split()) for a, b in bounds)
