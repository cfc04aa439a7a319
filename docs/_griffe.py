"""A griffe extension for the API pages (mkdocs.yml, mkdocstrings `extensions:`).

A docstring that writes an indexing expression as plain text, like `support[c][p]`, would otherwise reach
Markdown as a reference link `[c][p]`, which mkdocs-autorefs cannot resolve (and `mkdocs build --strict`
fails on). Here an identifier followed by two or more subscripts, outside backticks, is set as code.
"""

from __future__ import annotations

import re

import griffe

_SUBSCRIPTS = re.compile(r"\b[A-Za-z_]\w*(?:\[[^\[\]\s`]+\]){2,}")


class CodeSubscripts(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = as_code(obj.docstring.value)


def as_code(text: str) -> str:
    """`text` with every bare `name[i][j]` wrapped in backticks; text already in backticks is left alone."""
    parts = text.split("`")
    parts[::2] = [_SUBSCRIPTS.sub(lambda match: f"`{match[0]}`", part) for part in parts[::2]]
    return "`".join(parts)
