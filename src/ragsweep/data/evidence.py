"""Evidence given as a quote, found in a parser's text: the span of the text that the quote copies.

A quote was printed by one extractor and is looked for in another's text, so what parsers change is folded away
on both sides before comparing: Unicode forms and ligatures (NFKC: `ﬁ` is `fi`), case, every whitespace
character (line breaks, a page's columns run together or apart, `Cash Flow s`), and hyphens that break a word
at a line's end. What is left is compared verbatim, else with rapidfuzz's `partial_ratio_alignment` (the most
similar stretch of the text, normalised Indel similarity), which absorbs cells reordered or dropped within a
table's line and a character misread here and there. The span found is the parser's own characters, so
`text[start:end]` is the reference, and the similarity is kept beside it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SHORTEST_FUZZY = 16  # folded characters below which only a verbatim match counts: short strings match anywhere
_BROKEN_WORD = re.compile(r"(?<=\w)-[ \t]*\n\s*(?=\w)")


@dataclass(frozen=True)
class Folded:
    """`text` folded (see the module), and each of its characters' position in the text it was folded from."""

    text: str
    origin: np.ndarray


def fold(text: str) -> Folded:
    """`text` without whitespace or line-end hyphens, NFKC-normalised and lower-cased, with its origins."""
    keep = np.ones(len(text), dtype=bool)
    for broken in _BROKEN_WORD.finditer(text):
        keep[broken.start() : broken.end()] = False
    if text.isascii():  # no form to normalise: whitespace and hyphens dropped at numpy's speed
        codes = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
        keep &= ~np.isin(codes, _ASCII_SPACE)
        origin = np.flatnonzero(keep)
        return Folded(codes[keep].tobytes().decode("ascii").lower(), origin)
    characters: list[str] = []
    origins: list[int] = []
    for position in np.flatnonzero(keep).tolist():
        for character in unicodedata.normalize("NFKC", text[position]).lower():
            if not character.isspace():
                characters.append(character)
                origins.append(position)
    return Folded("".join(characters), np.array(origins, dtype=np.int64))


_ASCII_SPACE = np.frombuffer(b" \t\n\r\x0b\x0c", dtype=np.uint8)


@dataclass(frozen=True)
class Match:
    """`text[start:end]` holds the quote, `similarity` alike in [0, 1] once folded (1.0: verbatim)."""

    start: int
    end: int
    similarity: float


def find_quote(text: str, quote: str, windows: Sequence[tuple[int, int]], min_similarity: float = 0.9,
               folded: dict[tuple[int, int], Folded] | None = None) -> Match | None:
    """Where `text` holds `quote`, looked for in each window of `text` in turn (a cited page, its neighbours, the
    whole document): the first verbatim match once folded, else the window's most similar stretch if at least
    `min_similarity` alike; None when no window holds it. `folded` keeps the windows of `text` folded so far, for
    the next quote of the same text."""
    from rapidfuzz import fuzz

    wanted = fold(quote).text
    if not wanted:
        return None
    folded = {} if folded is None else folded
    for start, end in windows:
        window = folded.get((start, end))
        if window is None:
            window = folded[(start, end)] = fold(text[start:end])
        at = window.text.find(wanted)
        if at >= 0:
            return _match(window, start, at, at + len(wanted), 1.0)
        if len(wanted) < SHORTEST_FUZZY or len(wanted) > len(window.text):
            continue
        aligned = fuzz.partial_ratio_alignment(wanted, window.text, score_cutoff=100 * min_similarity)
        if aligned is None or aligned.dest_end <= aligned.dest_start:
            continue
        first, last, score = _snapped(window, text, start, wanted, aligned.dest_start, aligned.dest_end)
        if score >= 100 * min_similarity:
            return _match(window, start, first, last, round(score / 100, 4))
    return None


SLACK = 8  # folded characters an alignment's ends may move to reach a word's edge


def _snapped(window: Folded, text: str, offset: int, wanted: str, first: int, end: int) -> tuple[int, int, float]:
    """The stretch [first, end) of the folded window moved to start and end at words' edges of the original text
    (an alignment may take a stray letter of the word before), the start then the end chosen by how alike the
    stretch is to `wanted` (rapidfuzz's `ratio`), and that similarity (0-100)."""
    from rapidfuzz import fuzz

    def starts_word(i: int) -> bool:
        at = offset + int(window.origin[i])
        return at == 0 or not text[at - 1].isalnum()

    def ends_word(i: int) -> bool:
        at = offset + int(window.origin[i - 1]) + 1
        return at >= len(text) or not text[at].isalnum()

    size = len(window.text)
    starts = [i for i in range(max(0, first - SLACK), min(end, first + SLACK + 1)) if starts_word(i)] or [first]
    first = max(starts, key=lambda i: (fuzz.ratio(wanted, window.text[i:end]), -abs(i - first)))
    ends = [i for i in range(max(first + 1, end - SLACK), min(size, end + SLACK) + 1) if ends_word(i)] or [end]
    end = max(ends, key=lambda i: (fuzz.ratio(wanted, window.text[first:i]), -abs(i - end)))
    return first, end, fuzz.ratio(wanted, window.text[first:end])


def _match(window: Folded, offset: int, first: int, end: int, similarity: float) -> Match:
    """The original characters from the folded stretch's first to its last, as a span of the whole text."""
    return Match(offset + int(window.origin[first]), offset + int(window.origin[end - 1]) + 1, similarity)
