"""The records every stage passes along. Offsets are half-open character offsets into a document."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    text: str


@dataclass(frozen=True, slots=True, order=True)
class Span:
    """Characters `start` (inclusive) to `end` (exclusive) of document `doc_id`."""

    doc_id: str
    start: int
    end: int

    def to_dict(self) -> dict[str, str | int]:
        return {"doc_id": self.doc_id, "start": self.start, "end": self.end}


class Chunk:
    """A piece of a document; `text == document.text[start:end]` always holds.

    A chunk made with `Chunk.of` holds its document's text and slices its own out when read, so a million
    chunks do not keep a second copy of the corpus; pickled, it carries only its own text.
    """

    __slots__ = ("doc_id", "start", "end", "_source", "_sliced")
    doc_id: str
    start: int
    end: int

    def __init__(self, doc_id: str, start: int, end: int, text: str) -> None:
        for name, value in (("doc_id", doc_id), ("start", start), ("end", end), ("_source", text),
                            ("_sliced", False)):
            object.__setattr__(self, name, value)

    @classmethod
    def of(cls, document: Document, start: int, end: int) -> Chunk:
        """The chunk `document.text[start:end]`, sliced from the document when its text is read."""
        chunk = cls(document.id, start, end, document.text)
        object.__setattr__(chunk, "_sliced", True)
        return chunk

    @property
    def text(self) -> str:
        return self._source[self.start : self.end] if self._sliced else self._source

    @property
    def span(self) -> Span:
        return Span(self.doc_id, self.start, self.end)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Chunk is immutable; cannot set {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Chunk):
            return NotImplemented
        return (self.doc_id, self.start, self.end, self.text) == (other.doc_id, other.start, other.end, other.text)

    def __hash__(self) -> int:
        return hash((self.doc_id, self.start, self.end))

    def __repr__(self) -> str:
        return f"Chunk(doc_id={self.doc_id!r}, start={self.start!r}, end={self.end!r}, text={self.text!r})"

    def __reduce__(self) -> tuple:
        return Chunk, (self.doc_id, self.start, self.end, self.text)


class ChunkTexts(Sequence[str]):
    """The chunks' texts as a sequence, each sliced when read: an embedder or index reads them in batches, and
    the corpus is never copied whole."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = chunks

    def __len__(self) -> int:
        return len(self.chunks)

    def __iter__(self) -> Iterator[str]:
        return (chunk.text for chunk in self.chunks)

    def __getitem__(self, position):  # type: ignore[override]
        if isinstance(position, slice):
            return [chunk.text for chunk in self.chunks[position]]
        return self.chunks[position].text


@dataclass(frozen=True, slots=True)
class Query:
    """A question whose answer lies in `references`; `answers` are reference answers in words (none, one
    or several, as SQuAD gives), `corpus` groups queries for per-corpus means."""

    id: str
    text: str
    references: tuple[Span, ...]
    answers: tuple[str, ...] = ()
    corpus: str | None = None


class Hit(NamedTuple):
    """One retrieved chunk: its position in the chunk list and the retriever's score.

    A named tuple rather than a frozen dataclass: a sweep builds millions of them, and a tuple is
    several times cheaper to construct.
    """

    index: int
    score: float


@dataclass(frozen=True)
class Dataset:
    """Documents and questions; `loading` counts what the loader changed or left out (e.g. spans
    repaired, unanswerable questions skipped), which a run records beside its metrics."""

    name: str
    documents: dict[str, Document] = field(repr=False)  # a repr stays one line (logs, cache keys of loaders)
    queries: list[Query] = field(repr=False)
    loading: dict[str, int] = field(default_factory=dict, compare=False)
    fingerprint: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fingerprint", _fingerprint(self.documents, self.queries))


def _fingerprint(documents: dict[str, Document], queries: list[Query]) -> str:
    """sha256 over document texts and queries, so a run records exactly what it was scored on."""
    digest = hashlib.sha256()
    for doc_id in sorted(documents):
        digest.update(json.dumps([doc_id, documents[doc_id].text]).encode())
    for query in queries:
        refs = [ref.to_dict() for ref in query.references]
        digest.update(json.dumps([query.id, query.text, refs, list(query.answers)]).encode())
    return digest.hexdigest()
