"""Files that are text already: `.txt` and Markdown, read as they are."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragsweep.parsing.base import Parsed, UnreadableFile, clean


@dataclass(frozen=True)
class PlainText:
    """A UTF-8 file read with universal newlines, its control characters dropped (`clean`); no library."""

    library = "python"

    def parse(self, path: Path) -> Parsed:
        try:
            with open(path, encoding="utf-8") as handle:
                return Parsed(clean(handle.read()))
        except UnicodeDecodeError as error:
            raise UnreadableFile(f"not UTF-8 ({error.reason} at byte {error.start}); re-save it as UTF-8") from None
