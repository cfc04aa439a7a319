"""A chunker ragsweep does not ship (LangChain's text splitters, a user's own code), scored on spans like its own.

Splitters that return strings (`TextSplitter.split_text`) lose where each piece came from; each is
located in its document (verbatim, in order, then fuzzy: `data.locate`), so the chunks are spans whose
text is the document's and every metric treats them as it treats ragsweep's chunkers.
"""

from __future__ import annotations

from typing import Any

from ragsweep.chunking.base import make_chunk
from ragsweep.data.locate import LostText, locate_in_order, lost_text_message
from ragsweep.types import Chunk, Document


class OwnChunker:
    """Wraps `component`: an object with `split_text(text) -> list[str]` (LangChain), `split(document)`
    returning Chunks or strings, or a callable `text -> list[str]`.

    Args:
        component: The splitter (given by `ragsweep.Evaluation`, or built from a nested `_target_` in YAML).
        name: What the user calls it; with `version`, its identity in the cache and the run's params when it
            was given as an object (a YAML component is identified by its config instead).
        version: Changed by the user whenever the splitter's output changes.
        min_similarity: How alike a string must be to the document's text to be located by fuzzy search.
    """

    def __init__(self, component: Any = None, name: str | None = None, version: str | None = None,
                 min_similarity: float = 0.9) -> None:
        if component is None:
            raise ValueError("chunker: OwnChunker wraps a splitter: pass it to ragsweep.Evaluation().run(chunker=...), "
                             "or give chunker.component a _target_ in your own YAML (--config-dir)")
        if not 0 < min_similarity <= 1:
            raise ValueError(f"chunker.min_similarity must be in (0, 1], got {min_similarity!r}")
        self.component, self.name, self.version, self.min_similarity = component, name, version, min_similarity
        self.located = {"exact": 0, "fuzzy": 0}  # pieces located so far, over every document split

    def split(self, doc: Document) -> list[Chunk]:
        if hasattr(self.component, "split_text"):
            pieces = self.component.split_text(doc.text)
        elif hasattr(self.component, "split"):
            pieces = self.component.split(doc)
        else:
            pieces = self.component(doc.text)
        pieces = list(pieces)
        if all(isinstance(piece, Chunk) for piece in pieces):
            return [_checked(doc, chunk) for chunk in pieces]
        placed = locate_in_order(doc.id, doc.text, [str(piece) for piece in pieces], self.min_similarity)
        if placed.lost:
            example = next(str(p) for p, span in zip(pieces, placed.spans, strict=True) if span is None)
            raise LostText(lost_text_message(f"chunker {self.name or type(self.component).__name__} on document "
                                             f"{doc.id}", "chunker", placed.lost, len(pieces), example,
                                             self.min_similarity))
        self.located["exact"] += placed.exact
        self.located["fuzzy"] += placed.fuzzy
        return [make_chunk(doc, start, end) for _, start, end in placed.spans]


def _checked(doc: Document, chunk: Chunk) -> Chunk:
    if chunk.doc_id != doc.id or chunk.text != doc.text[chunk.start:chunk.end]:
        raise LostText(f"chunker: a Chunk of document {doc.id} does not hold the document's text at "
                       f"[{chunk.start}, {chunk.end}) (doc_id {chunk.doc_id!r}); a Chunk's text must be "
                       "document.text[start:end], or return plain strings and ragsweep locates them")
    return chunk
