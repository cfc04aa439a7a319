"""One integer line holding every document, measured in characters or tokens.

Each document gets its own stretch of the line, apart from the next, so that spans in different
documents can neither overlap nor touch. A character span maps to the tokens whose character ranges
overlap it (every token touched counts whole).

Mapping is linear in the spans given: they are grouped by document once, never compared with every
document. Only documents that a mapped span lies in are tokenised (a corpus of a million chunks has
references and retrieved chunks in a few thousand documents), so each document's stretch of the token
line is sized by its UTF-8 length, which bounds its token count without tokenising it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Document, Span

UNITS = ("tokens", "chars")


class UnitLine:
    def __init__(self, documents: dict[str, Document], unit: str, tokenizer: Tokenizer | None = None) -> None:
        if unit not in UNITS:
            raise ValueError(f"metrics.unit must be one of {UNITS}, got {unit!r}")
        self.unit = unit
        self.documents = documents
        self.tokenizer = tokenizer or Tokenizer()
        ids = sorted(documents)
        self._position = {doc_id: position for position, doc_id in enumerate(ids)}
        if unit == "tokens":  # a token holds at least one byte
            lengths = np.fromiter((documents[i].utf8_length for i in ids), dtype=np.int64, count=len(ids))
        else:
            lengths = np.fromiter((documents[i].length for i in ids), dtype=np.int64, count=len(ids))
        ends = np.cumsum(lengths + 1)  # the gap keeps documents from touching
        self._offset = np.concatenate(([0], ends[:-1]))
        self._end = int(ends[-1]) if len(ends) else 0
        self._token_ranges: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def intervals(self, spans: Sequence[Span]) -> np.ndarray:
        """(len(spans), 2) unit intervals of character spans, in the given order."""
        return self.intervals_of([span.doc_id for span in spans],
                                 np.array([(span.start, span.end) for span in spans], dtype=np.int64).reshape(-1, 2))

    def intervals_of(self, doc_ids: Sequence[str], bounds: np.ndarray) -> np.ndarray:
        """Unit intervals of the character spans (doc_ids[i], *bounds[i]), in the given order."""
        positions = np.fromiter((self._position[doc_id] for doc_id in doc_ids), dtype=np.int64, count=len(doc_ids))
        result = bounds.astype(np.int64, copy=True).reshape(-1, 2)
        if self.unit == "tokens" and len(positions):
            order = np.argsort(positions, kind="stable")
            cuts = np.flatnonzero(np.diff(positions[order])) + 1
            for rows in np.split(order, cuts):
                token_starts, token_ends = self.token_ranges(doc_ids[rows[0]])
                starts, ends = bounds[rows, 0], bounds[rows, 1]
                result[rows, 0] = np.searchsorted(token_ends, starts, side="right")  # first token ending after start
                result[rows, 1] = np.searchsorted(token_starts, ends, side="left")  # tokens starting before end
        return result + self._offset[positions][:, None]

    def beyond(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 2) intervals past every document, one after another, each as long as its text in this
        line's unit: evidence no document holds, which no chunk can meet."""
        sizes = np.fromiter((len(text) if self.unit == "chars" else max(1, self.tokenizer.count(text))
                             for text in texts), dtype=np.int64, count=len(texts))
        ends = self._end + np.cumsum(sizes + 1)
        return np.stack([ends - sizes, ends], axis=1).reshape(-1, 2)

    def token_ranges(self, doc_id: str) -> tuple[np.ndarray, np.ndarray]:
        """Character start and end of each token of a document, tokenised on first use."""
        if doc_id not in self._token_ranges:
            self._token_ranges[doc_id] = self.tokenizer.token_ranges(self.documents[doc_id].text)
        return self._token_ranges[doc_id]

    def widened(self, spans: Sequence[Span]) -> list[Span]:
        """Each span widened to the characters of the units it touches: a chunk shares a unit with the span
        exactly when, measured in units, it overlaps it, and then it shares a character with the widened span."""
        if self.unit == "chars":
            return list(spans)
        wide = []
        for span in spans:
            token_starts, token_ends = self.token_ranges(span.doc_id)
            first = int(np.searchsorted(token_ends, span.start, side="right"))
            last = int(np.searchsorted(token_starts, span.end, side="left"))
            wide.append(Span(span.doc_id, min(span.start, int(token_starts[first])) if first < last else span.start,
                             max(span.end, int(token_ends[last - 1])) if first < last else span.end))
        return wide
