"""Catch `group=unknown_option`, and a group chosen twice, on the command line before Hydra composes anything.

Hydra's own error for an unknown option spans many lines of search-path details; users get one line naming
the group, the bad value and the options that exist. A group chosen twice Hydra takes silently, the last
winning, while the run's name keeps both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

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
