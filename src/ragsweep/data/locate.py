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
