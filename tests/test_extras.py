"""The optional extras install what the docs' examples and the notebooks import (pip install -e ".[EXTRA]")."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
BASE = [Requirement(r).name for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]


def _imports(code: str) -> set[str]:
    """Top-level modules a piece of Python imports."""
    nodes = list(ast.walk(ast.parse(code)))
    return ({alias.name.split(".")[0] for node in nodes if isinstance(node, ast.Import) for alias in node.names}
            | {node.module.split(".")[0] for node in nodes if isinstance(node, ast.ImportFrom) and node.module})


def _providers(module: str) -> set[str]:
    return {name.lower().replace("_", "-") for name in importlib.metadata.packages_distributions().get(module, [])}


def _installed_by(extra: str) -> set[str]:
    """Distributions the extra and ragsweep's own dependencies bring, with everything they require."""
    wanted = [Requirement(r).name for r in EXTRAS[extra]] + BASE
    seen: set[str] = {"ragsweep"}
    while wanted:
        name = wanted.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        try:
            requirements = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        wanted += [Requirement(r).name for r in requirements if "extra ==" not in r]
    return seen


def _docs_langchain_example() -> str:
    page = (ROOT / "docs" / "python-api.md").read_text()
    section = page[page.index("## Score your own pipeline"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.parametrize(("extra", "code"), [
    ("langchain", _docs_langchain_example()),
    *[("notebooks", "\n".join("".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]
                              if cell["cell_type"] == "code"))
      for path in sorted((ROOT / "notebooks").glob("*.ipynb"))],
])
def test_an_extra_installs_what_its_examples_import(extra, code):
    brought = _installed_by(extra)
    missing = [module for module in sorted(_imports(code) - set(sys.stdlib_module_names))
               if not _providers(module) & brought]
    assert not missing, f"{missing} are imported but not installed by ragsweep[{extra}]"


def test_the_test_extra_installs_the_others():
    assert "ragsweep[langchain,notebooks]" in EXTRAS["test"]
