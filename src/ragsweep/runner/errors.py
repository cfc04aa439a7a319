"""The error a config that cannot work raises, and the one-line wording of its causes."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

import yaml


class ConfigError(ValueError):
    """A config value that cannot work; the message names the key and the fix."""


def yaml_problem(error: yaml.YAMLError) -> str:
    """A YAML parser's error in one line: what is wrong and where (PyYAML's own message takes five)."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"not valid YAML ({problem}{where})"


def closest(key: object, options: Iterable[object], prefix: str = "") -> str:
    """`did you mean <option>? ` for the option nearest a mistyped key, or nothing."""
    match = difflib.get_close_matches(str(key), [str(option) for option in options], n=1, cutoff=0.6)
    return f"did you mean {prefix}{match[0]}? " if match else ""


def first_line(error: Exception) -> str:
    """An error's first line, or its type's name when it has no message."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def in_group(message: str, group: str) -> str:
    """A message of the model a `group`'s component asks (its nested generator), naming that model's settings where
    they are: `generator.n_ctx` -> `query.generator.n_ctx`, `generator=transformers` -> `query/generator=transformers`
    (`judge.` -> `relevance_judge.` for the llm judge as a relevance judge)."""
    message = re.sub(r"(?<![\w./])generator(?=([.=]))",
                     lambda found: f"{group}{'.' if found[1] == '.' else '/'}generator", message)
    return re.sub(r"(?<![\w./])judge\.", f"{group}.", message) if group == "relevance_judge" else message
