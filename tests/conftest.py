"""Shared fixtures. The chroma_general benchmark lives in ../shared beside the checkout (CI has it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import ragsweep  # noqa: F401  (offline defaults before any model library loads)
from ragsweep.data.chroma_general import ChromaGeneralDataset
from ragsweep.types import Dataset

ROOT = Path(__file__).resolve().parents[1]
CHROMA_GENERAL = ROOT.parent / "shared" / "data" / "chroma_general"


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
