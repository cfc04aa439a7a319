"""The import-linter contracts in .importlinter hold, and they would catch an arrow that points up."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(source: Path) -> subprocess.CompletedProcess:
    """lint-imports on the ragsweep package under `source` (a src/ folder), with the project's contracts."""
    return subprocess.run([str(LINT_IMPORTS), "--config", str(ROOT / ".importlinter"), "--no-cache"],
                          cwd=source, env={"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)


def test_every_layer_contract_is_kept():
    result = _lint(ROOT / "src")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "2 kept, 0 broken" in result.stdout


def test_an_upward_import_or_mlflow_outside_tracking_breaks_them(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "ragsweep", source / "ragsweep", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    with (source / "ragsweep" / "tracking" / "runs.py").open("a") as module:
        module.write("\nfrom ragsweep.runner import run as _upward  # noqa: E402\n")
    with (source / "ragsweep" / "metrics" / "ranking.py").open("a") as module:
        module.write("\nimport mlflow as _tracked  # noqa: E402\n")
    result = _lint(source)
    assert result.returncode != 0
    assert "ragsweep.tracking.runs -> ragsweep.runner" in result.stdout
    assert "ragsweep.metrics.ranking -> mlflow" in result.stdout
