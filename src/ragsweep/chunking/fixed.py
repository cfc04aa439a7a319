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
        starts, ends = self.tokenizer.token_ranges(doc.text)
        n_tokens = len(starts)
        chunks = []
        for first in range(0, n_tokens, self.size - self.overlap):
            last = min(first + self.size, n_tokens)
            chunks.append(make_chunk(doc, int(starts[first]), int(ends[last - 1])))
            if last == n_tokens:
                break
        return chunks
