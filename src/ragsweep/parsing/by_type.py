"""One parser per file type: what a folder of PDFs, HTML pages, Word and Markdown files is read with."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragsweep.parsing.base import Parser


@dataclass(frozen=True)
class ByFileType:
    """Reads each file with the parser of its type, by its suffix (case ignored); `parser=pypdf` and the other
    options differ only in `pdf`.

    Args:
        pdf: The PDF parser (`PdfiumText`, `PypdfText`, `PdfminerText`).
        html: For `.html` and `.htm`.
        docx: For `.docx`.
        text: For `.txt`, `.md` and `.markdown`, read as they are.
    """

    pdf: Parser
    html: Parser
    docx: Parser
    text: Parser

    @property
    def by_suffix(self) -> dict[str, Parser]:
        return {".pdf": self.pdf, ".html": self.html, ".htm": self.html, ".docx": self.docx, ".txt": self.text,
                ".md": self.text, ".markdown": self.text}

    @property
    def suffixes(self) -> tuple[str, ...]:
        return tuple(self.by_suffix)

    def parser_of(self, path: Path) -> Parser | None:
        """The parser of `path`'s type; None for a type none reads."""
        return self.by_suffix.get(path.suffix.lower())
