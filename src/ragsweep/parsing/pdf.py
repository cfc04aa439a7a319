"""PDF parsers from three well-kept libraries; each gives a file's pages, joined as `Parsed.of_pages` joins them.

They differ in what survives: reading order of columns, table cells on a line, hyphenation, ligatures, speed.
docs/configuration/parser.md gives each one's licence and measured speed. An error a library raises on a broken
file is turned into one line naming the file where files are parsed (`ragsweep.parsing.files`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragsweep.parsing.base import Parsed, UnreadableFile, library

ENCRYPTED = "it is encrypted with a password; decrypt it or remove it from the folder"


@dataclass(frozen=True)
class PdfiumText:
    """PDFium's text extraction (Chrome's PDF engine) through pypdfium2: binary wheels, Apache-2.0 or BSD-3."""

    preload = ("pypdfium2",)

    @property
    def library(self) -> str:
        return library("pypdfium2")

    def parse(self, path: Path) -> Parsed:
        import pypdfium2

        try:
            document = pypdfium2.PdfDocument(str(path))
        except pypdfium2.PdfiumError as error:
            if "password" in str(error).lower():
                raise UnreadableFile(ENCRYPTED) from None
            raise
        try:
            texts = []
            for page in document:
                text_page = page.get_textpage()
                texts.append(text_page.get_text_range())
                text_page.close()
                page.close()
            return Parsed.of_pages(texts)
        finally:
            document.close()


@dataclass(frozen=True)
class PypdfText:
    """pypdf's `extract_text` (pure Python, BSD-3); `layout` keeps the page's columns apart with spaces."""

    layout: bool = False
    preload = ("pypdf",)

    @property
    def library(self) -> str:
        return library("pypdf")

    def parse(self, path: Path) -> Parsed:
        import pypdf

        reader = pypdf.PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):  # most filings restrict editing only: no password to open
            raise UnreadableFile(ENCRYPTED)
        mode = "layout" if self.layout else "plain"
        return Parsed.of_pages([page.extract_text(extraction_mode=mode) or "" for page in reader.pages])


@dataclass(frozen=True)
class PdfminerText:
    """pdfminer.six's layout analysis (pure Python, MIT): pages split at the form feed it ends each with."""

    preload = ("pdfminer.high_level",)

    @property
    def library(self) -> str:
        return library("pdfminer.six")

    def parse(self, path: Path) -> Parsed:
        from pdfminer.high_level import extract_text
        from pdfminer.pdfdocument import PDFPasswordIncorrect

        try:
            pages = extract_text(str(path)).split("\f")
        except PDFPasswordIncorrect:
            raise UnreadableFile(ENCRYPTED) from None
        if len(pages) > 1 and not pages[-1].strip():
            pages.pop()
        return Parsed.of_pages(pages)
