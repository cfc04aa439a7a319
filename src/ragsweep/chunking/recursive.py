"""LangChain-style recursive splitting, computed on spans so every chunk points back into its document."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence

from ragsweep.chunking.base import check_size_overlap, make_chunk, strip_span
from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Chunk, Document

DEFAULT_SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")

Piece = tuple[int, int]


class RecursiveChunker:
    """Splits on the first separator present, recursing into pieces that are still too long.

    Reproduces chunking_evaluation's RecursiveTokenChunker (itself LangChain's
    RecursiveCharacterTextSplitter with `keep_separator=True`): a separator stays at the start of
    the piece that follows it, pieces are packed while the sum of their lengths stays within
    `size`, and each chunk is stripped of surrounding whitespace. As in LangChain, a chunk's
    length is the sum of its pieces' lengths, which can differ by a token or two from the
    length of the chunk's text.

    Args:
        size: Maximum chunk length, in `length` units (> 0).
        overlap: Length carried over from the previous chunk (0 <= overlap < size).
        separators: Literal separators, tried in order; "" splits into characters.
        length: `tokens` (tiktoken) or `chars`.
        encoding: tiktoken encoding used when `length` is `tokens`.
    """

    def __init__(
        self,
        size: int = 200,
        overlap: int = 0,
        separators: Sequence[str] = DEFAULT_SEPARATORS,
        length: str = "tokens",
        encoding: str = "cl100k_base",
    ) -> None:
        check_size_overlap(size, overlap)
        if length not in ("tokens", "chars"):
            raise ValueError(f"chunker.length must be 'tokens' or 'chars', got {length!r}")
        if not separators:
            raise ValueError('chunker.separators must not be empty; end the list with "" to allow any cut')
        self.size = size
        self.overlap = overlap
        self.separators = tuple(separators)
        self.length = length
        self.tokenizer = Tokenizer(encoding)

    def _measure(self) -> Callable[[str], int]:
        return self.tokenizer.count if self.length == "tokens" else len

    def split(self, doc: Document) -> list[Chunk]:
        return [make_chunk(doc, start, end) for start, end in self.split_region(doc.text, 0, len(doc.text))]

    def split_region(self, text: str, start: int, end: int) -> list[Piece]:
        """The spans `split` would cut `text[start:end]` into, as offsets into `text`."""
        return self._split(text, (start, end), self.separators, self._measure())

    def _split(
        self, text: str, region: Piece, separators: Sequence[str], measure: Callable[[str], int]
    ) -> list[Piece]:
        separator, finer = _choose_separator(text, region, separators)
        chunks: list[Piece] = []
        fitting: list[tuple[Piece, int]] = []
        for piece in _pieces(text, region, separator):
            piece_len = measure(text[piece[0] : piece[1]])
            if piece_len < self.size:
                fitting.append((piece, piece_len))
                continue
            chunks += self._merge(text, fitting)
            fitting = []
            chunks += self._split(text, piece, finer, measure) if finer else [piece]
        chunks += self._merge(text, fitting)
        return [span for span in chunks if span[0] < span[1]]

    def _merge(self, text: str, pieces: list[tuple[Piece, int]]) -> list[Piece]:
        """Pack adjacent pieces into chunks of total length <= size, keeping `overlap` behind."""
        merged: list[Piece] = []
        window: deque[tuple[Piece, int]] = deque()
        total = 0
        for piece, piece_len in pieces:
            if total + piece_len > self.size and window:
                merged.append(strip_span(text, window[0][0][0], window[-1][0][1]))
                while total > self.overlap or (total + piece_len > self.size and total > 0):
                    total -= window.popleft()[1]
            window.append((piece, piece_len))
            total += piece_len
        if window:
            merged.append(strip_span(text, window[0][0][0], window[-1][0][1]))
        return merged


def _choose_separator(text: str, region: Piece, separators: Sequence[str]) -> tuple[str, Sequence[str]]:
    """The first separator found in the region, and the finer ones left for its pieces."""
    for i, separator in enumerate(separators):
        if separator == "":
            return "", ()
        if text.find(separator, region[0], region[1]) != -1:
            return separator, separators[i + 1 :]
    return separators[-1], ()


def _pieces(text: str, region: Piece, separator: str) -> list[Piece]:
    """Cut the region before each separator occurrence (non-overlapping, left to right)."""
    start, end = region
    if separator == "":
        return [(i, i + 1) for i in range(start, end)]
    pattern = re.compile(re.escape(separator))
    cuts = [start] + [m.start() for m in pattern.finditer(text, start, end)] + [end]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if a < b]
