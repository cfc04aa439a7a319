"""Catch `group=unknown_option`, a group chosen twice and a value that needs quotes on the command line before Hydra
composes anything, and expand `~` in a value as a shell would.

Hydra's own error for an unknown option spans many lines of search-path details; users get one line naming
the group, the bad value and the options that exist. A group chosen twice Hydra takes silently, the last
winning, while the run's name keeps both. Hydra's grammar reads neither `~` nor `(` in a value unquoted, and a path
with spaces left unquoted reaches it as several words: its own error names a lexer, not the fix.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Sequence
from pathlib import Path

from hydra.errors import HydraException

from ragsweep.hydra_internals import parse_overrides

_GROUP_CHOICE = re.compile(r"^\+{0,2}([A-Za-z_]\w*)=([\w.,-]+)$")


def unknown_choices(argv: Sequence[str], conf_dirs: Path | Sequence[Path]) -> list[str]:
    """One message per `group=value[,value...]` argument naming an option with no YAML file in any of
    `conf_dirs` (the project's conf/, then a user's --config-dir)."""
    folders = [conf_dirs] if isinstance(conf_dirs, Path) else list(conf_dirs)
    problems = []
    for arg in argv:
        match = _GROUP_CHOICE.match(arg)
        if not match or not any((folder / match.group(1)).is_dir() for folder in folders):
            continue
        group, values = match.groups()
        options = sorted({path.stem for folder in folders for path in (folder / group).glob("*.yaml")})
        for value in values.split(","):
            if value not in options and value != "null":
                problems.append(
                    f"{group}={value} is not an option of '{group}'; choose one of {', '.join(options)} "
                    f"(or add conf/{group}/{value}.yaml)"
                )
    return problems


def repeated_groups(argv: Sequence[str], conf_dirs: Sequence[Path]) -> list[str]:
    """One message per config group the command line chooses more than once (`chunker=fixed chunker=sentence`),
    naming every value given."""
    given: dict[str, list[str]] = {}
    for arg in argv:
        match = _GROUP_CHOICE.match(arg)
        if match and any((folder / match.group(1)).is_dir() for folder in conf_dirs):
            given.setdefault(match.group(1), []).append(match.group(2))
    return [f"{group} is chosen {len(values)} times ({', '.join(f'{group}={value}' for value in values)}); choose "
            f"it once, or sweep its options with -m {group}={','.join(dict.fromkeys(values))}"
            for group, values in given.items() if len(values) > 1]


_HOME_VALUE = re.compile(r"^([~+]{0,2}[\w.@/-]+)=(~.*)$")


def home_expanded(argv: Sequence[str]) -> list[str]:
    """`argv` with `KEY=~/x` (each value of `KEY=~/a,~/b`) read as a shell reads `~/x`: the user's home, which the
    shell leaves alone after `dataset.path=` and Hydra's grammar cannot read."""
    expanded = []
    for arg in argv:
        match = _HOME_VALUE.match(arg)
        if match:
            values = [_hydra_value(os.path.expanduser(value)) for value in match.group(2).split(",")]
            arg = f"{match.group(1)}={','.join(values)}"
        expanded.append(arg)
    return expanded


def unquoted_values(overrides: Sequence[str]) -> list[str]:
    """A message for each value Hydra cannot read that quotes make readable, with the quoted form: a value with
    spaces the shell split into words (`dataset.path=my docs/x`), or a path holding a character Hydra reserves
    (`(`, `#`)."""
    problems = []
    for position, arg in enumerate(overrides):
        key, equals, value = arg.partition("=")
        if not equals:
            continue
        words = list(itertools.takewhile(lambda word: "=" not in word and not word.startswith(("~", "-")),
                                         overrides[position + 1:]))
        whole = " ".join([value, *words])
        fixed = _shell_quoted(key, whole)
        if words and _readable(f"{key}={_hydra_value(whole)}"):
            problems.append(f"cannot read the overrides: {' '.join(words)} is not KEY=VALUE: the shell split the value "
                            f"of {key} at its spaces; quote it: {fixed}")
        elif not words and ("/" in value or "\\" in value) and not _readable(arg) and _readable(
                f"{key}={_hydra_value(value)}"):
            problems.append(f"cannot read the overrides: {arg}: Hydra's grammar reads this value only in quotes; "
                            f"quote it: {fixed}")
    return problems


def _hydra_value(value: str) -> str:
    """`value` as an override's value: as it is when Hydra reads it so, else in quotes."""
    if _readable(f"key={value}") or '"' in value or value.endswith("\\"):
        return value
    return f'"{value}"'


def _shell_quoted(key: str, value: str) -> str:
    """`KEY=VALUE` with the value in Hydra's quotes and the whole in the shell's, to type as shown."""
    if "'" not in value:
        return "'" + f'{key}="{value}"' + "'"
    return '"' + f'{key}=\\"{value}\\"' + '"' if '"' not in value else f"{key}={value}"


def _readable(override: str) -> bool:
    try:
        parse_overrides([override])
    except HydraException:
        return False
    return True
