"""The records every stage passes along. Offsets are half-open character offsets into a document."""

from __future__ import annotations

import hashlib
import json
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


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document; `text == document.text[start:end]` always holds."""

    doc_id: str
    start: int
    end: int
    text: str

    @property
    def span(self) -> Span:
        return Span(self.doc_id, self.start, self.end)


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
