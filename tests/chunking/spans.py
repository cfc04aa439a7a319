"""The span invariant every chunker keeps, shared by the contract test and the per-class tests."""

from __future__ import annotations

from collections.abc import Sequence

from ragsweep.types import Chunk, Document


def assert_spans_point_back(chunks: Sequence[Chunk], doc: Document) -> None:
    """Each chunk's text is exactly the characters its span names, inside `doc`, chunks in order of start."""
    for chunk in chunks:
        assert chunk.doc_id == doc.id
        assert 0 <= chunk.start < chunk.end <= len(doc.text)
        assert chunk.text == doc.text[chunk.start : chunk.end]
    starts = [chunk.start for chunk in chunks]
    assert starts == sorted(starts)
