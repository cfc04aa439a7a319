"""Reference spans checked against their documents as a loader reads them, and moved to their text if asked."""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Collection

from ragsweep.data.base import DatasetError
from ragsweep.types import Document, MovedSpan, Span

SPAN_MISMATCH = ("error", "repair")


def span_options(on_span_mismatch: str, repair_window: int) -> None:
    """Reject bad `dataset.on_span_mismatch` / `dataset.repair_window` values when the loader is built."""
    if on_span_mismatch not in SPAN_MISMATCH:
        raise DatasetError(f"dataset.on_span_mismatch must be one of {', '.join(SPAN_MISMATCH)}, "
                           f"got {on_span_mismatch!r}")
    if not isinstance(repair_window, int) or isinstance(repair_window, bool) or repair_window < 0:
        raise DatasetError(f"dataset.repair_window must be a non-negative integer (characters), got {repair_window!r}")


class SpanChecker:
    """Checks one load's reference spans against their documents, and moves them if asked.

    A span must lie in a known document; a span that carries its text (`content`) must match the
    document there. Real files carry offsets that miss their text by a character or two, so under
    `repair` a mismatching span moves to the nearest exact occurrence of its text that starts within
    `repair_window` characters of its start (ties: the earlier one). Mismatches left are collected,
    not raised at once, so that `finish` can say how many records need fixing.

    Args:
        documents: The load's documents by id.
        on_span_mismatch: `error` or `repair`.
        repair_window: How far (characters) a span may move under `repair`.
    """

    def __init__(self, documents: dict[str, Document], on_span_mismatch: str = "error",
                 repair_window: int = 10) -> None:
        span_options(on_span_mismatch, repair_window)
        self.documents, self.mode, self.window = documents, on_span_mismatch, repair_window
        self.records: set[str] = set()
        self.mismatches: dict[str, list[str]] = {}  # record -> one message per mismatching span, in file order
        self.moved: list[MovedSpan] = []
        self.crlf = 0  # mismatches whose offsets were counted on \r\n line endings
        self._breaks: dict[str, list[int]] = {}  # a document's line breaks as offsets into its \r\n text

    def check(self, span: Span, record: str, name: str, content: str | None = None) -> Span:
        """`span`, or where it moved to; `record` locates the record (file:line), `name` its field."""
        where = f"{record} {name}"
        self.records.add(record)
        document = self.documents.get(span.doc_id)
        if document is None:
            hint = unknown_document(span.doc_id, self.documents)
            raise DatasetError(f"{where}: unknown doc_id {span.doc_id!r}; {hint}")
        size = len(document.text)
        # with its text given, a span running past the end is a mismatch (repairable), not a bad range
        if not 0 <= span.start < span.end or (content is None and span.end > size):
            raise DatasetError(
                f"{where}: span [{span.start}, {span.end}) is invalid for document {span.doc_id!r} of "
                f"{size} characters; need 0 <= start < end <= {size}"
            )
        found = document.text[span.start : span.end]
        if content is None or found == content:
            return span
        if self.mode == "repair":
            start = nearest(document.text, content, span.start, self.window)
            if start is not None:
                moved = Span(span.doc_id, start, start + len(content))
                self.moved.append(MovedSpan(where, span, moved))
                return moved
        differs = f"{where}: content {_clip(content)!r} differs from the document text at [{span.start}, {span.end}): "
        on_crlf = self._on_crlf(span, document.text, content)
        if on_crlf is not None:
            self.crlf += 1
            breaks, start, end = on_crlf
            message = (f"{differs}{_clip(found)!r}; its offsets were counted on the text with \\r\\n (CRLF) line "
                       f"endings, {breaks} line break(s) before {span.start}, and ragsweep reads each line ending as "
                       f"\\n: on that text the span is [{start}, {end})")
        else:
            message = f"{differs}{_clip(found)!r}" + (
                f" and does not start within {self.window} characters of {span.start}" if self.mode == "repair" else "")
        self.mismatches.setdefault(record, []).append(message)
        return span

    def _on_crlf(self, span: Span, text: str, content: str) -> tuple[int, int, int] | None:
        """(line breaks before the start, start, end) in `text` of a span whose offsets were counted on `text` with
        \\r\\n line endings, when `content` is there; None when line endings do not explain the mismatch."""
        breaks = self._breaks.get(span.doc_id)
        if breaks is None:
            newlines = [found.start() for found in re.finditer("\n", text)]
            breaks = self._breaks[span.doc_id] = [at + count for count, at in enumerate(newlines)]
        before = bisect.bisect_left(breaks, span.start)
        start, end = span.start - before, span.end - bisect.bisect_left(breaks, span.end)
        wanted = content.replace("\r\n", "\n")
        if (before or wanted != content) and start < end and text[start:end] == wanted:
            return before, start, end
        return None

    def finish(self) -> dict[str, int]:
        """Raise for the mismatches left; else the counts the dataset records (`spans_repaired` under repair; the
        spans moved are `moved`, which a run lists in its output folder)."""
        if self.mismatches:
            first = next(iter(self.mismatches.values()))[0]
            spans = sum(len(messages) for messages in self.mismatches.values())
            fix = ("fix the offsets or the content, or raise dataset.repair_window" if self.mode == "repair" else
                   "fix the offsets or the content, or set dataset.on_span_mismatch=repair to move each span to "
                   f"its text within dataset.repair_window={self.window} characters")
            if self.crlf:
                crlf = ("count the offsets on the text with \\n line endings, as ragsweep reads it: subtract from each "
                        "offset the line breaks before it")
                fix = crlf if self.crlf == spans else f"{fix}; for the {self.crlf} counted on \\r\\n, {crlf}"
            raise DatasetError(f"{first}; {len(self.mismatches)} of {len(self.records)} records affected "
                               f"({spans} span{'s' * (spans != 1)}); {fix}")
        return {"spans_repaired": len(self.moved)} if self.mode == "repair" else {}


def nearest(text: str, content: str, start: int, window: int) -> int | None:
    """The start of the occurrence of `content` in `text` nearest `start`, within `window`; ties: earlier."""
    best = None
    at = text.find(content, max(0, start - window))
    while at != -1 and at <= start + window:
        if best is None or abs(at - start) < abs(best - start):
            best = at
        at = text.find(content, at + 1)
    return best


def unknown_document(doc_id: str, ids: Collection[str]) -> str:
    """What to do about a doc_id no document has: drop a file's extension, give the subfolder, or the id meant."""
    stem, dot, extension = doc_id.rpartition(".")
    bare = stem if dot and "/" not in extension else doc_id
    if bare != doc_id and bare in ids:
        return f"drop the '.{extension}': the document's id is {bare!r}"
    below = [known for known in ids if known.endswith(f"/{bare}")]
    if len(below) == 1:
        return f"did you mean {below[0]!r}? a document in a subfolder is named by its path under the documents folder"
    close = difflib.get_close_matches(doc_id, list(ids), 1, 0.8)
    return (f"did you mean {close[0]!r}? " if close else "") + "it must name one of the documents"


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
