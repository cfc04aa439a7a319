"""Training triplets for the span relevance judge, cut from a dataset's reference spans.

A triplet is a question, a window of the corpus that holds its reference span (relevant) and one that
overlaps none of its spans (irrelevant), labelled by `metrics.relevance.span_relevance`. Half of the
irrelevant windows come from the question's own document and share the most words with it: the hard
negatives retrieval returns.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragsweep.metrics.relevance import span_relevance
from ragsweep.types import Dataset, Query, Span

_WORD = re.compile(r"[A-Za-z0-9]{4,}")


@dataclass(frozen=True)
class Triplet:
    """A question with a window that holds its reference span and one that overlaps none of its spans."""

    question: str
    relevant: str
    irrelevant: str
    kind: str  # where the irrelevant window came from: same_document or any_document
    spans: tuple[Span, Span]  # where the two windows are: relevant, irrelevant


def relevance_triplets(dataset: Dataset, questions: Sequence[Query], n: int, per_question: int,
                       window_chars: Sequence[int], seed: int) -> list[Triplet]:
    """Up to `n` triplets, `per_question` per question in a shuffled order.

    Relevant: a window of random length around one of the question's reference spans, holding all of it
    (or, for a span longer than the window, at least half). Irrelevant: a window overlapping none of its
    spans; every other triplet from the question's own document, the one of 8 tries sharing the most
    words with the question, else from anywhere in the corpus. Windows start and end at spaces.
    """
    rng = random.Random(seed)
    documents, ids = dataset.documents, sorted(dataset.documents)
    order = [query for query in questions if query.references for _ in range(per_question)]
    rng.shuffle(order)
    triplets: list[Triplet] = []
    for turn, query in enumerate(order):
        if len(triplets) >= n:
            break
        reference = rng.choice(query.references)
        text = documents[reference.doc_id].text
        relevant = _snap(text, _window_around(reference, len(text), window_chars, rng))
        hard = turn % 2 == 0
        candidates = []
        for _ in range(8 if hard else 1):
            doc_id = reference.doc_id if hard else rng.choice(ids)
            span = _snap(documents[doc_id].text, _random_window(doc_id, len(documents[doc_id].text), window_chars, rng))
            if span is not None and span_relevance(span, query.references) == 0:
                candidates.append(span)
        if relevant is None or span_relevance(relevant, query.references) != 1 or not candidates:
            continue
        words = set(_WORD.findall(query.text.lower()))
        passages = {span: documents[span.doc_id].text[span.start:span.end] for span in candidates}
        irrelevant = max(candidates, key=lambda span: len(words & set(_WORD.findall(passages[span].lower()))))
        triplets.append(Triplet(query.text, text[relevant.start:relevant.end], passages[irrelevant],
                                "same_document" if hard else "any_document", (relevant, irrelevant)))
    if not triplets:
        raise ValueError("relevance_judge=span_trained: no training pair could be made from the dataset's spans")
    return triplets


def _window_around(reference: Span, length: int, window_chars: Sequence[int], rng: random.Random) -> Span:
    size = rng.randint(*window_chars)
    span_length = reference.end - reference.start
    if span_length >= size:  # a long reference: a window inside it, holding at least half
        size = max(size, (span_length + 1) // 2)
        start = reference.start + rng.randint(0, span_length - size)
        return Span(reference.doc_id, start, start + size)
    start = rng.randint(max(0, reference.end - size), max(0, min(reference.start, length - size)))
    return Span(reference.doc_id, start, min(length, start + size))


def _random_window(doc_id: str, length: int, window_chars: Sequence[int], rng: random.Random) -> Span | None:
    size = min(rng.randint(*window_chars), length)
    if size < 20:
        return None
    start = rng.randint(0, length - size)
    return Span(doc_id, start, start + size)


def _snap(text: str, span: Span | None) -> Span | None:
    """The span widened to the spaces around it (at most 40 characters each way), so no word is cut."""
    if span is None:
        return None
    start, end = span.start, span.end
    while start > 0 and span.start - start < 40 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and end - span.end < 40 and not text[end].isspace():
        end += 1
    return Span(span.doc_id, start, end)
