"""Whole sentences packed into chunks of a token budget."""

from __future__ import annotations

import re

from ragsweep.chunking.base import check_size_overlap, make_chunk, strip_span
from ragsweep.chunking.fixed import token_windows
from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Chunk, Document

# A sentence ends at . ! ? or … (plus closing quotes/brackets) before whitespace, or at a blank line.
_SENTENCE_GAP = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n\s*\n")


def sentence_bounds(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, the gaps between sentences left out; may include empty ones."""
    bounds, start = [], 0
    for gap in _SENTENCE_GAP.finditer(text):
        bounds.append((start, gap.start()))
        start = gap.end()
    bounds.append((start, len(text)))
    return bounds


class SentenceChunker:
    """Packs consecutive sentences into chunks of at most `size` tokens.

    A sentence longer than `size` is cut into `size`-token windows first. A chunk's length is
    the sum of its sentences' token counts. Chunks run from the first character of their first
    sentence to the last character of their last, so the text between sentences is kept.

    Args:
        size: Maximum tokens per chunk (> 0).
        overlap: Sentences repeated from the end of the previous chunk (>= 0).
        encoding: tiktoken encoding that defines a token.
    """

    def __init__(self, size: int = 200, overlap: int = 0, encoding: str = "cl100k_base") -> None:
        check_size_overlap(size, overlap, overlap_in_size_units=False)
        self.size = size
        self.overlap = overlap
        self.tokenizer = Tokenizer(encoding)

    def split(self, doc: Document) -> list[Chunk]:
        sentences = self._sentences(doc.text)
        chunks = []
        first = 0
        while first < len(sentences):
            last, total = first, sentences[first][2]
            while last + 1 < len(sentences) and total + sentences[last + 1][2] <= self.size:
                last += 1
                total += sentences[last][2]
            chunks.append(make_chunk(doc, sentences[first][0], sentences[last][1]))
            if last + 1 == len(sentences):
                break
            first = max(first + 1, last + 1 - self.overlap)
        return chunks

    def _sentences(self, text: str) -> list[tuple[int, int, int]]:
        """(start, end, tokens) of each sentence, long ones already cut to `size` tokens."""
        sentences = []
        for start, end in (strip_span(text, *bound) for bound in sentence_bounds(text)):
            if start >= end:
                continue
            count = self.tokenizer.count(text[start:end])
            if count <= self.size:
                sentences.append((start, end, count))
            else:
                for a, b in token_windows(self.tokenizer, text, start, end, self.size, self.size):
                    sentences.append((a, b, self.tokenizer.count(text[a:b])))
        return sentences
