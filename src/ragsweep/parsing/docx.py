"""Word files as Markdown text: headings as `#` lines, list items as `-` lines, tables as rows of cells."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ragsweep.parsing.base import Parsed, clean, library

_HEADING = re.compile(r"^(?:Heading (\d)|Title)$")


@dataclass(frozen=True)
class DocxText:
    """python-docx (MIT) reading the body in order: each paragraph a line (a heading style as `#`s, a list style
    as `- `), each table a block of `| cell | cell |` rows, blocks apart by a blank line."""

    preload = ("docx",)

    @property
    def library(self) -> str:
        return library("python-docx")

    def parse(self, path: Path) -> Parsed:
        import docx
        from docx.table import Table

        blocks = []
        for item in docx.Document(str(path)).iter_inner_content():
            if isinstance(item, Table):
                blocks.append("\n".join("| " + " | ".join(" ".join(cell.text.split()) for cell in row.cells) + " |"
                                        for row in item.rows))
                continue
            text = item.text.strip()
            if not text:
                continue
            style = item.style.name if item.style is not None else ""
            heading = _HEADING.match(style)
            if heading:
                text = "#" * int(heading.group(1) or 1) + " " + text
            elif style.startswith("List"):
                text = "- " + text
            blocks.append(text)
        return Parsed(clean("\n\n".join(blocks)))
