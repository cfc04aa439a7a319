"""Widen each passed-on chunk to the paragraph or section that holds it."""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence

from ragsweep.augment.base import Passage, merged
from ragsweep.memo import remember
from ragsweep.types import Chunk, Document, Hit, Span


class ParentAugmenter:
    """Passes on, for each retrieved chunk, its parent: the stretch of its document between two `boundary`
    matches (a blank line: paragraphs; a heading: sections) that holds it, or the parents it crosses; a parent
    longer than `max_characters` is cut to that many characters around the chunk. Passages of one question that
    then overlap or touch become one.

    Args:
        boundary: a regular expression matching what separates parents; the match belongs to neither.
            Paragraphs: `\\n\\s*\\n`; Markdown sections: `\\n(?=#{1,6} )`.
        max_characters: the longest passage a parent gives (null: whole parents, however long), never shorter
            than the chunk.
    """

    def __init__(self, boundary: str = r"\n\s*\n", max_characters: int | None = 4000) -> None:
        try:
            self.boundary = re.compile(boundary)
        except (re.error, TypeError) as error:
            raise ValueError(f"augment.boundary={boundary!r} is not a regular expression: {error}") from None
        if max_characters is not None and (isinstance(max_characters, bool) or not isinstance(max_characters, int)
                                           or max_characters <= 0):
            raise ValueError(f"augment.max_characters must be a positive integer or null, got {max_characters!r}")
        self.max_characters = max_characters
        self._parents: dict[str, tuple[list[int], list[int]]] = {}

    def augment(self, hits: Sequence[Sequence[Hit]], chunks: Sequence[Chunk],
                documents: Mapping[str, Document]) -> list[list[Passage]]:
        return [merged([Passage(self._parent(chunks[hit.index], documents[chunks[hit.index].doc_id]), hit.score)
                        for hit in query_hits]) for query_hits in hits]

    def _parent(self, chunk: Chunk, document: Document) -> Span:
        starts, ends = remember(self._parents, document.id, lambda: self._bounds(document.text), limit=4096)
        first = bisect.bisect_right(starts, chunk.start) - 1
        last = bisect.bisect_right(starts, max(chunk.end - 1, chunk.start)) - 1
        start, end = min(starts[first], chunk.start), max(ends[last], chunk.end)
        if self.max_characters is not None and end - start > self.max_characters:
            room = max(self.max_characters - (chunk.end - chunk.start), 0)
            before = min(chunk.start - start, room // 2)
            after = min(end - chunk.end, room - before)
            start, end = chunk.start - min(chunk.start - start, room - after), chunk.end + after
        return Span(chunk.doc_id, start, end)

    def _bounds(self, text: str) -> tuple[list[int], list[int]]:
        """Where each parent of `text` starts and ends: the stretches between boundary matches."""
        starts, ends = [0], []
        for match in self.boundary.finditer(text):
            if match.end() > match.start():
                ends.append(match.start())
                starts.append(match.end())
        ends.append(len(text))
        return starts, ends
