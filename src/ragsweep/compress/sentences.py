"""Keep the sentences of the passages most similar to the question, up to a token budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ragsweep.augment.base import Passage
from ragsweep.chunking.sentence import sentence_bounds
from ragsweep.embedding.base import Embedder
from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Document, Span


class SentenceCompressor:
    """Passes on, of each question's passages, the sentences most similar to the question (cosine of the job's
    embedder, each sentence embedded once and cached like every text), most similar first, while their tokens fit
    in `max_tokens`; a sentence that would not fit is skipped for a shorter one, and the most similar sentence is
    kept even when it alone exceeds the budget. The kept sentences are passed on in their passages' rank and their
    documents' order, those that follow one another in a passage joined into one span (with the text between them).

    Args:
        embedder: the job's embedder (handed over by the runner).
        max_tokens: the budget of the context passed on, in tokens of `encoding`.
        encoding: tiktoken encoding that counts a sentence's tokens.
    """

    def __init__(self, embedder: Embedder, max_tokens: int = 300, encoding: str = "cl100k_base") -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ValueError(f"compress.max_tokens must be a positive integer, got {max_tokens!r}")
        self.embedder, self.max_tokens, self.tokenizer = embedder, max_tokens, Tokenizer(encoding)

    def compress(self, questions: Sequence[str], passages: Sequence[Sequence[Passage]],
                 documents: Mapping[str, Document]) -> list[list[Passage]]:
        sentences = [[(rank, _sentences(passage.span, documents[passage.span.doc_id].text))
                      for rank, passage in enumerate(row)] for row in passages]
        texts = [documents[span.doc_id].text[span.start:span.end]
                 for row in sentences for _, spans in row for span in spans]
        vectors = self.embedder.encode(texts, role="passage") if texts else np.empty((0, 0), dtype=np.float32)
        asked = self.embedder.encode(list(questions), role="query") if texts else None
        compressed, first = [], 0
        for position, (row, query_passages) in enumerate(zip(sentences, passages, strict=True)):
            count = sum(len(spans) for _, spans in row)
            similarity = vectors[first:first + count] @ asked[position] if count else np.zeros(0)
            keep = self._within_budget(similarity, texts[first:first + count])
            compressed.append(_joined(row, keep, query_passages))
            first += count
        return compressed

    def _within_budget(self, similarity: np.ndarray, texts: Sequence[str]) -> set[int]:
        """The positions of the sentences kept: most similar first, each that still fits the budget."""
        kept, spent = set(), 0
        for position in np.argsort(-similarity, kind="stable").tolist():
            tokens = self.tokenizer.count(texts[position])
            if not kept or spent + tokens <= self.max_tokens:
                kept.add(position)
                spent += tokens
        return kept


def _sentences(span: Span, text: str) -> list[Span]:
    """The non-blank sentences of the passage `span` of `text`, as spans of the document."""
    piece = text[span.start:span.end]
    return [Span(span.doc_id, span.start + start, span.start + end) for start, end in sentence_bounds(piece)
            if piece[start:end].strip()]


def _joined(row: list[tuple[int, list[Span]]], keep: set[int], passages: Sequence[Passage]) -> list[Passage]:
    """The kept sentences of each passage, in order, those next to one another joined, with the passage's score."""
    joined, position = [], 0
    for rank, spans in row:
        run: list[Span] = []
        for span in spans:
            if position in keep:
                run.append(span)
            elif run:
                joined.append(Passage(Span(span.doc_id, run[0].start, run[-1].end), passages[rank].score))
                run = []
            position += 1
        if run:
            joined.append(Passage(Span(run[0].doc_id, run[0].start, run[-1].end), passages[rank].score))
    return joined
