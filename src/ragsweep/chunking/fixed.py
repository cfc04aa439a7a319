"""Windows of a fixed number of tokens, as chunking_evaluation's FixedTokenChunker cuts them."""

from __future__ import annotations

from ragsweep.chunking.base import check_size_overlap, make_chunk
from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Chunk, Document


class FixedTokenChunker:
    """Cuts the token sequence into windows of `size` tokens that start every `size - overlap` tokens.

    Spans come from the tokens' character ranges rather than from decoding the tokens, so a
    window boundary inside a multi-byte character cannot corrupt the text.

    Args:
        size: Tokens per chunk (> 0).
        overlap: Tokens shared by consecutive chunks (0 <= overlap < size).
        encoding: tiktoken encoding that defines a token.
    """

    def __init__(self, size: int = 800, overlap: int = 400, encoding: str = "cl100k_base") -> None:
        check_size_overlap(size, overlap)
        self.size = size
        self.overlap = overlap
        self.tokenizer = Tokenizer(encoding)

    def split(self, doc: Document) -> list[Chunk]:
        windows = token_windows(self.tokenizer, doc.text, 0, len(doc.text), self.size, self.size - self.overlap)
        return [make_chunk(doc, start, end) for start, end in windows]


def token_windows(
    tokenizer: Tokenizer, text: str, start: int, end: int, size: int, step: int
) -> list[tuple[int, int]]:
    """Character spans of `size`-token windows over text[start:end], one every `step` tokens."""
    starts, ends = tokenizer.token_ranges(text[start:end])
    windows = []
    for first in range(0, len(starts), step):
        last = min(first + size, len(starts))
        windows.append((start + int(starts[first]), start + int(ends[last - 1])))
        if last == len(starts):
            break
    return windows
