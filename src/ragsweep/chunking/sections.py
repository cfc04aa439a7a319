"""Chunks that follow a document's structure: Markdown headings, pages, tables.

Parsed HTML and Word files, and Markdown, carry their headings as `#` lines (`ragsweep.parsing`); a PDF carries
its pages. A chunk never crosses a heading (nor, with `within_pages`, a page), a table's rows stay in one chunk,
and each chunk knows the path of headings it sits under, which retrievers can read before its text.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence

from ragsweep.chunking.base import check_size_overlap, make_chunk, strip_span
from ragsweep.chunking.recursive import DEFAULT_SEPARATORS, RecursiveChunker
from ragsweep.types import Chunk, Document, HeadedChunk

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)
_TABLE = re.compile(r"(?:^[ \t]*\|.*(?:\n|$))+", re.MULTILINE)  # consecutive lines starting with |
PATH_SEPARATOR = " > "


class SectionChunker:
    """Splits each section (from a heading to the next heading at any level) on its own, as the recursive chunker
    does, keeping each Markdown table whole (a table longer than `size` is one chunk).

    Args:
        size, overlap, length, encoding: As the recursive chunker's, within a section.
        within_pages: Also cut at each page's start (a parsed PDF's pages), so no chunk spans two pages.
        headings_in_text: Retrievers and rerankers read a chunk as its heading path (`Guide > Install`), a blank
            line and its text; its span, and so every span metric, stays the chunk's own characters.
    """

    def __init__(self, size: int = 200, overlap: int = 0, length: str = "tokens", encoding: str = "cl100k_base",
                 within_pages: bool = False, headings_in_text: bool = False) -> None:
        check_size_overlap(size, overlap)
        self.splitter = RecursiveChunker(size, overlap, DEFAULT_SEPARATORS, length, encoding)
        self.within_pages, self.headings_in_text = within_pages, headings_in_text

    def split(self, doc: Document) -> list[Chunk]:
        text = doc.text
        spans: list[tuple[int, int]] = []
        cuts = sorted({0, *(start for start, _, _ in headings(text)), *self._pages(doc), len(text)})
        for start, end in zip(cuts, cuts[1:]):
            at = start
            for table in _TABLE.finditer(text, start, end):
                spans += self.splitter.split_region(text, at, table.start())
                spans.append(strip_span(text, table.start(), table.end()))
                at = table.end()
            spans += self.splitter.split_region(text, at, end)
        return [make_chunk(doc, start, end) for start, end in spans if start < end]

    def _pages(self, doc: Document) -> Sequence[int]:
        return getattr(doc, "pages", ()) if self.within_pages else ()

    def retrieved_as(self, chunks: Sequence[Chunk], documents: Mapping[str, Document]) -> Sequence[Chunk]:
        """With `headings_in_text`, each chunk with the path of headings it sits under; else the chunks."""
        if not self.headings_in_text:
            return chunks
        paths: dict[str, tuple[list[int], list[str]]] = {}
        headed = []
        for chunk in chunks:
            document = documents[chunk.doc_id]
            if chunk.doc_id not in paths:
                paths[chunk.doc_id] = heading_paths(document.text)
            starts, names = paths[chunk.doc_id]
            at = bisect.bisect_right(starts, chunk.start) - 1
            headed.append(HeadedChunk.of(document, chunk.start, chunk.end, names[at] if at >= 0 else ""))
        return headed


def headings(text: str) -> list[tuple[int, int, str]]:
    """(start, level, title) of each Markdown heading line, those inside fenced code blocks left out."""
    fences = [match.start() for match in _FENCE.finditer(text)]
    found = []
    for match in _HEADING.finditer(text):
        if bisect.bisect_right(fences, match.start()) % 2 == 0:  # an even number of fences before it: not in code
            found.append((match.start(), len(match.group(1)), match.group(2).strip()))
    return found


def heading_paths(text: str) -> tuple[list[int], list[str]]:
    """Each heading's start and the path of headings down to it (`Guide > Install > Linux`)."""
    starts, paths, stack = [], [], []
    for start, level, title in headings(text):
        stack = [(lower, name) for lower, name in stack if lower < level] + [(level, title)]
        starts.append(start)
        paths.append(PATH_SEPARATOR.join(name for _, name in stack))
    return starts, paths

