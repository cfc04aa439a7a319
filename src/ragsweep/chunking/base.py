"""The chunking stage's contract."""

from __future__ import annotations

from typing import Protocol

from ragsweep.contract import PREFLIGHT, PRELOAD, VERSION, OptionalAttribute
from ragsweep.types import Chunk, Document


class Chunker(Protocol):
    """Splits one document into chunks whose spans point back into it."""

    def split(self, doc: Document) -> list[Chunk]: ...


# What the engine reads on a chunker beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {
    "located": OptionalAttribute("mapping", "a dict of how many of a splitter's strings were found verbatim (`exact`) "
                                            "and fuzzily (`fuzzy`), read once a chunking is done (a property)"),
    "retrieved_as": OptionalAttribute("method", "retrieved_as(chunks, documents): the chunks as retrievers and "
                                                "rerankers read them (`Chunk.search_text`, e.g. with their headings), "
                                                "their spans unchanged; applied to every chunking it makes"),
    "preflight": PREFLIGHT,
    "preload": PRELOAD,
    "version": VERSION,
}


def make_chunk(doc: Document, start: int, end: int) -> Chunk:
    return Chunk.of(doc, start, end)


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Narrow [start, end) to exclude leading and trailing whitespace (as `str.strip` does)."""
    piece = text[start:end]
    return start + len(piece) - len(piece.lstrip()), end - len(piece) + len(piece.rstrip())


def check_size_overlap(size: int, overlap: int, overlap_in_size_units: bool = True) -> None:
    """Reject sizes a chunker cannot honour, before any work starts."""
    if size <= 0:
        raise ValueError(f"chunker.size must be > 0, got {size}; set chunker.size to a positive number")
    if overlap < 0:
        raise ValueError(f"chunker.overlap must be >= 0, got {overlap}; set chunker.overlap=0 or more")
    if overlap_in_size_units and overlap >= size:
        raise ValueError(
            f"chunker.overlap ({overlap}) must be smaller than chunker.size ({size}); "
            f"lower chunker.overlap or raise chunker.size"
        )
