"""HTML pages as Markdown text: the main content kept, navigation, footers and markup dropped."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ragsweep.parsing.base import Parsed, clean, library

_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>])")  # Markdown escapes the converter adds to plain characters


@dataclass(frozen=True)
class HtmlText:
    """trafilatura's main-content extraction (Apache-2.0) to Markdown, headings as `#` lines and tables as rows
    of cells, so the heading chunker sees the page's structure. Its escapes of plain characters are undone: a
    quote of the page (`trust_env`) must be found in the text as the reader saw it.

    Args:
        favor_recall: Keep borderline content (trafilatura's `favor_recall`): documentation pages are mostly
            content, and evidence lost to boilerplate removal cannot be retrieved.
        tables: Keep tables.
    """

    favor_recall: bool = True
    tables: bool = True
    preload = ("trafilatura",)

    @property
    def library(self) -> str:
        return library("trafilatura")

    def parse(self, path: Path) -> Parsed:
        import trafilatura

        markdown = trafilatura.extract(path.read_bytes(), output_format="markdown", include_tables=self.tables,
                                       include_links=False, include_images=False, include_comments=False,
                                       favor_recall=self.favor_recall, with_metadata=False)
        return Parsed(_ESCAPED.sub(r"\1", clean(markdown or "")).strip())
