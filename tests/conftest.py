"""Shared fixtures. The chroma_general benchmark lives in ../shared beside the checkout (CI has it)."""

from __future__ import annotations

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
