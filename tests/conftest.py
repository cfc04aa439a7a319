"""Shared fixtures. The chroma_general benchmark lives in ../shared beside the checkout (CI has it)."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

import ragsweep  # noqa: F401  (offline defaults before any model library loads)
from ragsweep.cores import CoreShare
from ragsweep.data.chroma_general import ChromaGeneralDataset
from ragsweep.types import Dataset

ROOT = Path(__file__).resolve().parents[1]
CHROMA_GENERAL = ROOT.parent / "shared" / "data" / "chroma_general"


# Seconds each scope (a test file, or the llama_cpp group) took in a full run of the suite: the scopes start
# longest first, so the last to finish is a short one and both workers end together. Rewritten by
# `RAGSWEEP_SCOPE_SECONDS=tests/scope_seconds.json make test`; a scope it does not list starts by its test count.
SCOPE_SECONDS = ROOT / "tests" / "scope_seconds.json"
_LLAMA_CPP = frozenset(path.relative_to(ROOT).as_posix() for path in (ROOT / "tests").rglob("test_*.py")
                       if "pytest.mark.llama_cpp" in path.read_text(encoding="utf-8"))
_ran: Counter[str] = Counter()


# Files whose tests share nothing (each runs a script in its own process): each test is a scope of its own.
EACH_TEST_ALONE = frozenset({"tests/test_benchmarks.py"})


def scope(nodeid: str) -> str:
    """What one worker runs whole: a test file (its module fixtures' sweeps run once), and every file marked
    `llama_cpp` together, one at a time, as two llama.cpp processes on the same cores each slow ~10x (their
    threads spin while they wait); a test of a file whose tests share nothing alone."""
    path = nodeid.split("::", 1)[0]
    return "llama_cpp" if path in _LLAMA_CPP else nodeid if path in EACH_TEST_ALONE else path


def pytest_xdist_make_scheduler(config, log):
    """`make test` runs two workers (`-n 2`), each taking a scope whole, in the order of the collection. A
    scheduler of our own: pytest 9.2's structured node ids lost the `xdist_group` suffix `--dist loadgroup`
    reads (pytest-xdist#1386)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByScope(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope(nodeid)

    config.option.loadscopereorder = False  # keep the longest-first order pytest_collection_modifyitems made
    return ByScope(config, log)


def pytest_collection_modifyitems(config, items):
    """Scopes longest first, by SCOPE_SECONDS (each scope's tests stay together and in their order)."""
    seconds = json.loads(SCOPE_SECONDS.read_text()) if SCOPE_SECONDS.is_file() else {}
    count = Counter(scope(item.nodeid) for item in items)

    def longest_first(item) -> tuple[float, str]:
        name = scope(item.nodeid)
        return -seconds.get(name, count[name]), name

    items.sort(key=longest_first)


def pytest_runtest_logreport(report):
    _ran[scope(report.nodeid)] += report.duration


def pytest_sessionfinish(session):
    """With RAGSWEEP_SCOPE_SECONDS=FILE, write each scope's seconds (setup, call and teardown) there."""
    target = os.environ.get("RAGSWEEP_SCOPE_SECONDS")
    if target and not hasattr(session.config, "workerinput"):  # the controller, which has every report
        Path(target).write_text(json.dumps({name: round(total, 1) for name, total in _ran.most_common()}, indent=1)
                                + "\n")


@pytest.fixture(scope="session")
def preloaded():
    """A server that forks `sweep.py` and `ragsweep` commands (tests/preloaded.py), one for each worker, with the
    environment the entry points see when a user runs them (their own HF_ and MLFLOW_ defaults, none of the
    suite's)."""
    from tests.preloaded import shared

    return shared()


@pytest.fixture(scope="session", autouse=True)
def _worker_holds_a_core_share():
    """Under `-n 2`, each worker counts as one process running a model in `CoreShare` while it lives, so the
    models of the two workers and of the sweeps they start split the cores instead of each taking all of them."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    with CoreShare().threaded():
        yield


@pytest.fixture(scope="session")
def chroma_general() -> Dataset:
    assert CHROMA_GENERAL.is_dir(), f"{CHROMA_GENERAL} is missing: clone ragsweep beside ../shared"
    return ChromaGeneralDataset(str(CHROMA_GENERAL)).load()


@pytest.fixture(scope="session")
def tiny_judges_root(tmp_path_factory) -> Path:
    """A project folder (`paths.root`) for the tests that build the trained judges with tiny settings (4
    examples): the same settings make the same model key, so each model trains once a session, not per
    test."""
    return tmp_path_factory.mktemp("tiny_judges")


@pytest.fixture(scope="session")
def run_notebook():
    """Executes a notebook of notebooks/ (analysis.ipynb unless named) on a project folder, as a user opening
    it there would, with `settings` as extra environment variables; returns its code cells with their outputs."""

    def run(project: Path, name: str = "analysis.ipynb", **settings: str) -> list:
        import nbclient
        import nbformat

        notebook = nbformat.read(ROOT / "notebooks" / name, as_version=4)
        variables = {"RAGSWEEP_PROJECT": str(project), **settings}
        os.environ.update(variables)
        try:
            nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3").execute()
        finally:
            for variable in variables:
                del os.environ[variable]
        return [cell for cell in notebook.cells if cell.cell_type == "code"]

    return run


@pytest.fixture(scope="session")
def scratch_project():
    """Makes a folder a copy of the project a user runs (sweep.py, sweeps/, conf/ without exports), so a
    test's MLflow store, stage cache, outputs and conf/best/ stay out of the checkout."""

    def copy(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "sweep.py", folder)
        shutil.copytree(ROOT / "sweeps", folder / "sweeps")
        shutil.copytree(ROOT / "conf", folder / "conf", symlinks=True, ignore=shutil.ignore_patterns("best"))
        return folder

    return copy
