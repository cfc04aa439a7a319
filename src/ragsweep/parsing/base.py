"""The parsing stage's contract: a file in, the text a configuration's spans index out.

A parser's text is that configuration's document: chunks and references are spans of it, so two parsers are
compared on the same questions by what evidence survives in their text. A PDF's pages are kept as character
ranges of that text, so evidence cited with a page is looked for there first and a chunk knows its pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Protocol

from ragsweep.contract import PRELOAD, VERSION


class UnreadableFile(ValueError):
    """A file its parser cannot open (encrypted, broken, not of its type); the message names the file's problem."""


class Parser(Protocol):
    """Reads one file into text; `library` names what does the reading and its version (part of a parse's key)."""

    library: str

    def parse(self, path: Path) -> Parsed: ...


class FileParser(Protocol):
    """The `parser` group's component: the parser of each file type it reads (`ragsweep.parsing.by_type`)."""

    suffixes: tuple[str, ...]

    def parser_of(self, path: Path) -> Parser | None: ...


# What the engine reads on a parser beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {"preload": PRELOAD, "version": VERSION}

PAGE_BREAK = "\n\n"  # between two pages' texts: a paragraph break to every chunker


@dataclass(frozen=True)
class Parsed:
    """A file's text; `pages` holds each page's first character (a file without pages is one page at 0), and
    `blank_pages` the (0-based) pages that gave no text, such as a scanned page."""

    text: str
    pages: tuple[int, ...] = (0,)
    blank_pages: tuple[int, ...] = ()

    @classmethod
    def of_pages(cls, pages: list[str]) -> Parsed:
        """Page texts joined by `PAGE_BREAK`, each page's start kept."""
        starts, blank, parts, at = [], [], [], 0
        for number, page in enumerate(pages):
            page = clean(page).strip()
            if not page:
                blank.append(number)
            starts.append(at)
            parts.append(page)
            at += len(page) + len(PAGE_BREAK)
        return cls(PAGE_BREAK.join(parts), tuple(starts), tuple(blank))

    def page_range(self, page: int) -> tuple[int, int]:
        """Characters [start, end) of 0-based `page` (the whole text for a file of one page)."""
        start = self.pages[page]
        end = self.pages[page + 1] - len(PAGE_BREAK) if page + 1 < len(self.pages) else len(self.text)
        return start, max(start, end)


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def clean(text: str) -> str:
    """One newline convention and no control characters: extractors emit `\\r\\n`, form feeds and markers of soft
    hyphens that no reader of the text wants, and offsets must mean the same to every later stage."""
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def library(distribution: str) -> str:
    """`name version` of an installed distribution, as a parse's key and a run's record name it."""
    try:
        return f"{distribution} {version(distribution)}"
    except PackageNotFoundError:
        return f"{distribution} (not installed)"
