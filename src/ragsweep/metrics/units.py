"""One integer line holding every document, measured in characters or tokens.

Each document gets its own stretch of the line, one unit apart from the next, so that spans in
different documents can neither overlap nor touch. A character span maps to the tokens whose
character ranges overlap it (every token touched counts whole).
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
        self._token_ranges: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._offset: dict[str, int] = {}
        position = 0
        for doc_id in sorted(documents):
            text = documents[doc_id].text
            if unit == "tokens":
                self._token_ranges[doc_id] = (tokenizer or Tokenizer()).token_ranges(text)
                length = len(self._token_ranges[doc_id][0])
            else:
                length = len(text)
            self._offset[doc_id] = position
            position += length + 1  # the gap keeps documents from touching

    def intervals(self, spans: Sequence[Span]) -> np.ndarray:
        """(len(spans), 2) unit intervals of character spans, in the given order."""
        result = np.empty((len(spans), 2), dtype=np.int64)
        doc_ids = np.array([span.doc_id for span in spans], dtype=object)
        bounds = np.array([(span.start, span.end) for span in spans], dtype=np.int64).reshape(-1, 2)
        for doc_id in set(doc_ids.tolist()):
            rows = np.flatnonzero(doc_ids == doc_id)
            starts, ends = bounds[rows, 0], bounds[rows, 1]
            if self.unit == "tokens":
                token_starts, token_ends = self._token_ranges[doc_id]
                starts = np.searchsorted(token_ends, starts, side="right")  # first token ending after start
                ends = np.searchsorted(token_starts, ends, side="left")  # tokens starting before end
            result[rows, 0] = starts + self._offset[doc_id]
            result[rows, 1] = ends + self._offset[doc_id]
        return result
