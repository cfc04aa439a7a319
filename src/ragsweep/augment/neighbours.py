"""Widen each passed-on chunk by its neighbours: the chunks before and after it, or characters on each side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragsweep.augment.base import Passage, merged
from ragsweep.types import Chunk, Document, Hit, Span


class NeighboursAugmenter:
    """Passes on each retrieved chunk together with `chunks` chunks on each side of it in its document (in the
    order the chunker made them), then `characters` more characters on each side, within the document; passages
    of one question that then overlap or touch become one (small-to-big retrieval: match on small chunks, read
    their surroundings).

    Args:
        chunks: neighbouring chunks added on each side (0: none). Needs the chunking, so not with a whole retriever.
        characters: characters added on each side after the chunks.
    """

    def __init__(self, chunks: int = 1, characters: int = 0) -> None:
        for key, value in (("chunks", chunks), ("characters", characters)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"augment.{key} must be an integer >= 0, got {value!r}")
        if not chunks and not characters:
            raise ValueError("augment.chunks and augment.characters are both 0, so nothing is added; "
                             "use augment=none, or set one of them")
        self.window, self.characters = chunks, characters

    def augment(self, hits: Sequence[Sequence[Hit]], chunks: Sequence[Chunk],
                documents: Mapping[str, Document]) -> list[list[Passage]]:
        return [merged([Passage(self._widened(chunks, hit.index, documents), hit.score) for hit in query_hits])
                for query_hits in hits]

    def _widened(self, chunks: Sequence[Chunk], index: int, documents: Mapping[str, Document]) -> Span:
        chunk = chunks[index]
        first = last = index
        for _ in range(self.window):
            if first > 0 and chunks[first - 1].doc_id == chunk.doc_id:
                first -= 1
            if last + 1 < len(chunks) and chunks[last + 1].doc_id == chunk.doc_id:
                last += 1
        window = [chunks[position] for position in range(first, last + 1)]
        start = min(neighbour.start for neighbour in window) - self.characters
        end = max(neighbour.end for neighbour in window) + self.characters
        return Span(chunk.doc_id, max(start, 0), min(end, documents[chunk.doc_id].length))
