"""The records every stage passes along. Offsets are half-open character offsets into a document."""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import InitVar, dataclass, field
from typing import Any, NamedTuple

from ragsweep.memo import remember


class Document:
    """A document's id and text. Loaders of many files use `data.reading.FileDocument`, which keeps its path, not its
    text."""

    __slots__ = ("id", "_text")
    id: str

    def __init__(self, id: str, text: str) -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "_text", text)

    @property
    def text(self) -> str:
        return self._text

    @property
    def length(self) -> int:
        """Characters in the text."""
        return len(self.text)

    @property
    def utf8_length(self) -> int:
        """Bytes in the text encoded as UTF-8."""
        return len(self.text.encode())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Document is immutable; cannot set {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Document):
            return NotImplemented
        return self.id == other.id and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, length={self.length})"

    def __reduce__(self) -> tuple:
        return Document, (self.id, self.text)


class PagedDocument(Document):
    """A parsed file's text and where each of its pages starts (a character offset; one page at 0 for a file
    without pages)."""

    __slots__ = ("pages",)
    pages: tuple[int, ...]

    def __init__(self, id: str, text: str, pages: tuple[int, ...] = (0,)) -> None:
        super().__init__(id, text)
        object.__setattr__(self, "pages", pages)

    def pages_of(self, start: int, end: int) -> tuple[int, ...]:
        """The pages, counted from 1, that characters [start, end) lie on."""
        first, last = bisect.bisect_right(self.pages, start), bisect.bisect_right(self.pages, max(start, end - 1))
        return tuple(range(first, last + 1))  # the first page starts at 0, so `first` is at least 1

    def __reduce__(self) -> tuple:
        return PagedDocument, (self.id, self.text, self.pages)


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

    A chunk made with `Chunk.of` holds its document and slices its own text out when read, so a million
    chunks do not keep a second copy of the corpus; pickled, it carries only its own text.
    """

    __slots__ = ("doc_id", "start", "end", "_source")
    doc_id: str
    start: int
    end: int

    def __init__(self, doc_id: str, start: int, end: int, text: str) -> None:
        self._set(doc_id, start, end, text)

    @classmethod
    def of(cls, document: Document, start: int, end: int) -> Chunk:
        """The chunk `document.text[start:end]`, sliced from the document when its text is read."""
        chunk = cls.__new__(cls)
        chunk._set(document.id, start, end, document)
        return chunk

    def _set(self, doc_id: str, start: int, end: int, source: str | Document) -> None:
        for name, value in (("doc_id", doc_id), ("start", start), ("end", end), ("_source", source)):
            object.__setattr__(self, name, value)

    @property
    def text(self) -> str:
        source = self._source
        return source if isinstance(source, str) else source.text[self.start : self.end]

    @property
    def span(self) -> Span:
        return Span(self.doc_id, self.start, self.end)

    @property
    def search_text(self) -> str:
        """What retrievers and rerankers read for the chunk: its text (a `HeadedChunk`'s headings first)."""
        return self.text

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


class HeadedChunk(Chunk):
    """A chunk read by retrievers with the path of headings it sits under (`Guide > Install`) before its text; its
    span and `text` are its own characters, as every chunk's."""

    __slots__ = ("heading",)
    heading: str

    def __init__(self, doc_id: str, start: int, end: int, text: str, heading: str = "") -> None:
        super().__init__(doc_id, start, end, text)
        object.__setattr__(self, "heading", heading)

    @classmethod
    def of(cls, document: Document, start: int, end: int, heading: str = "") -> HeadedChunk:  # type: ignore[override]
        chunk = super().of(document, start, end)
        object.__setattr__(chunk, "heading", heading)
        return chunk

    @property
    def search_text(self) -> str:
        return f"{self.heading}\n\n{self.text}" if self.heading else self.text

    def __reduce__(self) -> tuple:
        return HeadedChunk, (self.doc_id, self.start, self.end, self.text, self.heading)


class ChunkTexts(Sequence[str]):
    """The chunks' texts as retrievers read them (`Chunk.search_text`), each sliced when read: an embedder or index
    reads them in batches, and the corpus is never copied whole."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = chunks

    def __len__(self) -> int:
        return len(self.chunks)

    def __iter__(self) -> Iterator[str]:
        return (chunk.search_text for chunk in self.chunks)

    def __getitem__(self, position):  # type: ignore[override]
        if isinstance(position, slice):
            return [chunk.search_text for chunk in self.chunks[position]]
        return self.chunks[position].search_text


@dataclass(frozen=True, slots=True)
class Query:
    """A question whose answer lies in `references`; `answers` are reference answers in words (none, one
    or several, as SQuAD gives), `corpus` groups queries for per-corpus means. `lost` holds the quoted evidence
    this configuration's documents do not hold (a parser lost it): it stays part of what the question asks for,
    so the question scores nothing of it. `quotes` are its evidence as its file quotes it (document, quote, page)
    where the spans are found in a parser's text, so they differ by parser (dataset=files)."""

    id: str
    text: str
    references: tuple[Span, ...]
    answers: tuple[str, ...] = ()
    corpus: str | None = None
    lost: tuple[str, ...] = ()
    quotes: tuple[tuple[str, str, int | None], ...] = field(default=(), compare=False)

    def sha256(self) -> str:
        """sha256 over canonical JSON of what the question asks: its text, references and reference answers. One
        question's, where the dataset's fingerprint covers them all, so a gate can name the question that changed;
        its quotes stand for its spans where it has them, so every parser's run hashes it alike."""
        references = ([{"doc": doc, "quote": quote, "page": page} for doc, quote, page in self.quotes] if self.quotes
                      else [span.to_dict() for span in self.references])
        payload = {"question": self.text, "references": references, "answers": list(self.answers)}
        canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()

    @property
    def evidence_located(self) -> float:
        """The share of the question's evidence its documents hold (1 for a question citing none: none is lost)."""
        cited = len(self.references) + len(self.lost)
        return len(self.references) / cited if cited else 1.0


class Hit(NamedTuple):
    """One retrieved chunk: its position in the chunk list and the retriever's score.

    A named tuple rather than a frozen dataclass: a sweep builds millions of them, and a tuple is
    several times cheaper to construct.
    """

    index: int
    score: float


@dataclass(frozen=True)
class MovedSpan:
    """A reference span a loader moved to its text (`dataset.on_span_mismatch=repair`): where its file gives it, the
    span given and where it moved, kept so a run can list what was changed in the user's data."""

    where: str
    given: Span
    moved: Span

    @property
    def distance(self) -> int:
        return abs(self.moved.start - self.given.start)

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "doc_id": self.given.doc_id, "given": [self.given.start, self.given.end],
                "moved": [self.moved.start, self.moved.end], "by": self.moved.start - self.given.start}


@dataclass(frozen=True)
class Dataset:
    """Documents and questions; `loading` counts what the loader changed or left out (e.g. spans
    repaired, unanswerable questions skipped), which a run records beside its metrics; `repairs` lists the spans
    it moved."""

    name: str
    documents: dict[str, Document] = field(repr=False)  # a repr stays one line (logs, cache keys of loaders)
    queries: list[Query] = field(repr=False)
    loading: dict[str, int] = field(default_factory=dict, compare=False)
    same_documents_as: InitVar[Dataset | None] = None  # a dataset of these very documents: not hashed again
    repairs: tuple[MovedSpan, ...] = field(default=(), compare=False, repr=False)
    fingerprint: str = field(init=False)
    documents_fingerprint: str = field(init=False, repr=False)  # the documents alone: what a chunking depends on

    def __post_init__(self, same_documents_as: Dataset | None) -> None:
        known = same_documents_as.documents_fingerprint if (
            same_documents_as is not None and same_documents_as.documents is self.documents) else None
        documents, everything = _fingerprints(self.documents, self.queries, known)
        object.__setattr__(self, "documents_fingerprint", documents)
        object.__setattr__(self, "fingerprint", everything)


def _fingerprints(documents: dict[str, Document], queries: list[Query],
                  known: str | None = None) -> tuple[str, str]:
    """sha256 over the document texts, and over them and the queries (so a run records exactly what it was scored
    on): one hash, read before and after the queries. `known`: the documents' digest, whose hash state this process
    keeps (a race's every round takes a subset of the questions of one dataset: 63 MB of documents at 100 k chunks)."""
    state = _DOCUMENT_HASHES.get(known) if known else None
    if state is None:
        digest = hashlib.sha256()
        for doc_id in sorted(documents):
            digest.update(json.dumps([doc_id, documents[doc_id].text]).encode())
        documents_only = digest.hexdigest()
        remember(_DOCUMENT_HASHES, documents_only, digest.copy, limit=4)
    else:
        documents_only, digest = str(known), state.copy()
    for query in queries:
        refs = [ref.to_dict() for ref in query.references]
        lost = [list(query.lost)] if query.lost else []  # a dataset that loses nothing keeps its fingerprint
        digest.update(json.dumps([query.id, query.text, refs, list(query.answers), *lost]).encode())
    return documents_only, digest.hexdigest()


_DOCUMENT_HASHES: dict[str, Any] = {}  # documents' digest -> the sha256 state after them (`_fingerprints`)
