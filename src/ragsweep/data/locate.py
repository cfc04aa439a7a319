"""Find where a model's copy of a text lies in a document, as a span whose text is the document's.

Models copy excerpts imperfectly: a changed word, dropped punctuation, other capitals, collapsed
whitespace. Chroma's chunking_evaluation finds such excerpts by fuzzy search and keeps the model's
string; here the span is what is kept, so its text is always `document[start:end]`, and a match
is accepted only when the document's text there is at least `min_similarity` alike (rapidfuzz's
normalised Indel similarity, 1 - edits / total length, case-insensitive).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_EDGE = re.compile(r"\b|(?<=\s)|(?=\s)")  # where a span may start or end: word edges and whitespace


@dataclass(frozen=True)
class Located:
    """`text[start:end]` matched the excerpt with `similarity` in [0, 1]; `exact` when it was a verbatim copy."""

    start: int
    end: int
    similarity: float
    exact: bool


def locate(text: str, excerpt: str, min_similarity: float = 0.9, start: int = 0, end: int | None = None) -> Located | None:
    """The span of `text[start:end]` that `excerpt` copies: the first verbatim occurrence, else the most
    similar stretch (snapped to word edges) when at least `min_similarity` alike, else None."""
    from rapidfuzz import fuzz

    if not 0 < min_similarity <= 1:
        raise ValueError(f"min_similarity must be in (0, 1], got {min_similarity!r}")
    end = len(text) if end is None else end
    wanted = excerpt.strip()
    if not wanted:
        return None
    found = text.find(wanted, start, end)
    if found >= 0:
        return Located(found, found + len(wanted), 1.0, True)
    window, target = _fold(text[start:end]), _fold(" ".join(wanted.split()))
    cutoff = 100 * min_similarity
    aligned = fuzz.partial_ratio_alignment(target, window, score_cutoff=cutoff)
    if aligned is None:
        return None
    slack = max(8, len(target) // 6)
    edges = sorted({m.start() for m in _EDGE.finditer(window)} | {0, len(window)})
    starts = [e for e in edges if abs(e - aligned.dest_start) <= slack] or [aligned.dest_start]
    ends = [e for e in edges if abs(e - aligned.dest_end) <= slack] or [aligned.dest_end]
    best = max(((fuzz.ratio(target, window[s:e]), -(e - s), s, e) for s in starts for e in ends if e > s),
               default=None)
    if best is None or best[0] < cutoff:
        return None
    s, e = _strip(window, best[2], best[3])
    return Located(start + s, start + e, round(best[0] / 100, 4), False)


def _fold(text: str) -> str:
    """Lower case, one character for one, so offsets in the folded text are offsets in the original."""
    return "".join(lower if len(lower := char.lower()) == 1 else char for char in text)


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class LostText(ValueError):
    """Text a user's component returned that is not in the documents, so no span can score it."""


@dataclass(frozen=True)
class Placed:
    """Where each of a component's strings lies (`doc_id`, `start`, `end`; None where it was not found)
    and how many were found verbatim and how many by fuzzy search."""

    spans: list[tuple[str, int, int] | None]
    exact: int
    fuzzy: int

    @property
    def lost(self) -> int:
        return sum(span is None for span in self.spans)


def locate_in_order(doc_id: str, text: str, pieces: list[str], min_similarity: float) -> Placed:
    """Spans of a splitter's strings in its document. Splitters return pieces in document order, each
    starting after the one before it (even with overlap), so each piece is sought from just after the
    previous piece's start: verbatim first, else by fuzzy search of the rest of the document."""
    spans: list[tuple[str, int, int] | None] = []
    exact = fuzzy = 0
    cursor = 0
    for piece in pieces:
        found = locate(text, piece, min_similarity, start=cursor)
        if found is None:
            spans.append(None)
            continue
        exact, fuzzy = exact + found.exact, fuzzy + (not found.exact)
        spans.append((doc_id, found.start, found.end))
        cursor = found.start + 1
    return Placed(spans, exact, fuzzy)


def locate_anywhere(documents: dict[str, str], piece: str, min_similarity: float) -> tuple[str, Located] | None:
    """The span of a retrieved text in any document: the first verbatim occurrence in document-id order,
    else the document where fuzzy search finds the most similar stretch."""
    wanted = piece.strip()
    if not wanted:
        return None
    for doc_id in sorted(documents):
        found = documents[doc_id].find(wanted)
        if found >= 0:
            return doc_id, Located(found, found + len(wanted), 1.0, True)
    best = None
    for doc_id in sorted(documents):
        found = locate(documents[doc_id], wanted, min_similarity)
        if found is not None and (best is None or found.similarity > best[1].similarity):
            best = (doc_id, found)
    return best


def lost_text_message(who: str, group: str, lost: int, total: int, example: str, min_similarity: float) -> str:
    """Why a component whose strings are not all in the documents cannot be scored, and what to change."""
    return (f"{who}: {lost} of {total} texts it returned are not in the documents (verbatim, or at least "
            f"{min_similarity:.0%} alike), e.g. {example[:80]!r}. Span metrics score where text lies in the "
            f"documents, so a component must return the documents' text, not a rewrite of it; for text only "
            f"lightly changed (case, whitespace), lower {group}.min_similarity (e.g. {group}.min_similarity=0.8)")
