"""The documentation site builds with `mkdocs build --strict`, covers every config group, and every benchmark
figure names its command, machine, date and commit.

The strict build fails on a broken link or anchor, a page missing from mkdocs.yml's nav, a griffe warning in
the API reference, or a hook that can no longer read the argument parsers or a config group.
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_bad_input import CASES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NOT_GROUPS = {"best", "__pycache__"}  # conf/best/ holds a user's exports, not options


def test_the_site_builds_strict(tmp_path):
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, (
        f"mkdocs build --strict failed (exit {result.returncode}); `make install-test` installs the docs "
        f"extra:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}")
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "ragsweep gate" in cli and "--max-drop" in cli  # generated from the parsers, not left empty
    refused = (site / "reference" / "bad-input" / "index.html").read_text(encoding="utf-8")
    assert all(f"<td>{name}</td>" in refused for name in CASES)  # every row of the test's table, from the test


@pytest.mark.parametrize("group", sorted(path.name for path in (ROOT / "conf").iterdir()
                                         if path.is_dir() and path.name not in NOT_GROUPS))
def test_every_config_group_has_a_page_listing_its_options(group):
    page = DOCS / "configuration" / f"{group}.md"
    assert page.is_file(), f"conf/{group}/ has no page: add docs/configuration/{group}.md to mkdocs.yml's nav"
    assert f"<!-- ragsweep:conf {group} -->" in page.read_text(encoding="utf-8"), (
        f"docs/configuration/{group}.md does not list conf/{group}/'s options (<!-- ragsweep:conf {group} -->)")


# ---- every figure on the benchmark pages carries its provenance -------------------------------------------

DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
COMMIT = re.compile(r"\bcommits? [0-9a-f]{7,40}\b")
COMMAND = re.compile(r"`(?:python|ragsweep|make|/usr/bin/time) [^`]+`")
MACHINE = re.compile(r"\b2-core machine\b|\bmachine\b")
TABLE_ROW = re.compile(r"^\|.*\d.*\|\s*$", re.M)


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) for each heading of a Markdown page, code fences skipped when looking for headings."""
    sections, heading, body, fenced = [], "(top)", [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("#"):
            sections.append((heading, "\n".join(body)))
            heading, body = line.lstrip("#").strip(), []
        else:
            body.append(line)
    sections.append((heading, "\n".join(body)))
    return sections


def _figure_sections() -> list[tuple[str, str, str]]:
    pages = [page for page in sorted((DOCS / "benchmarks").glob("*.md")) if page.name != "index.md"]
    return [(page.name, heading, body) for page in pages
            for heading, body in _sections(page.read_text(encoding="utf-8")) if TABLE_ROW.search(body)]


def test_the_benchmark_pages_hold_tables_of_figures():
    assert len(_figure_sections()) >= 8


@pytest.mark.parametrize(("page", "heading", "body"), _figure_sections(),
                         ids=[f"{page}:{heading}" for page, heading, _ in _figure_sections()])
def test_each_benchmark_table_names_its_command_machine_date_and_commit(page, heading, body):
    wanted = (("a date", DATE), ("a commit", COMMIT), ("a command", COMMAND), ("the machine", MACHINE))
    missing = [what for what, pattern in wanted if not pattern.search(body)]
    assert not missing, f"docs/benchmarks/{page}, section {heading!r}: its figures need {', '.join(missing)}"


RUN_LOG = re.compile(r"^<!-- ragsweep:runs (?P<file>[\w./-]+) -->$", re.M)


def test_each_run_log_names_each_runs_date_and_commit_and_its_section_the_command_and_machine():
    logs = [(page.name, heading, body, match["file"]) for page in sorted((DOCS / "benchmarks").glob("*.md"))
            for heading, body in _sections(page.read_text(encoding="utf-8")) for match in RUN_LOG.finditer(body)]
    assert logs, "the grid benchmark's runs are a run log (docs/benchmarks/grid_runs.csv)"
    for page, heading, body, name in logs:
        assert COMMAND.search(body) and MACHINE.search(body), f"docs/benchmarks/{page}, {heading!r}: name them"
        with (DOCS / name).open(newline="", encoding="utf-8") as file:
            runs = list(csv.DictReader(file))
        assert runs and all(DATE.fullmatch(run["date"]) and re.fullmatch(r"[0-9a-f]{7,40}", run["commit"])
                            for run in runs), f"docs/{name}: every run needs its date and commit"


def test_the_provenance_check_catches_a_table_without_it():
    bare = "# Speed\n\n| grid | s |\n|---|---|\n| quick | 12.5 |\n"
    [(_, body)] = [section for section in _sections(bare) if TABLE_ROW.search(section[1])]
    assert not DATE.search(body) and not COMMIT.search(body) and not COMMAND.search(body)


def test_architecture_names_every_benchmark_script():
    architecture = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    listed = architecture[architecture.index("\nbenchmarks/ "):architecture.index("\ndocs/ ")]
    missing = [path.stem for path in sorted((ROOT / "benchmarks").glob("*.py")) if path.stem not in listed]
    assert not missing, f"ARCHITECTURE.md's `benchmarks/` entry (Where things are) does not name {missing}"
