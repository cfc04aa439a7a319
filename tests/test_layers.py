"""The import-linter contracts in .importlinter hold, and they would catch an arrow that points up; one class per
name."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
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


# What reaches MLflow's client: a tracker's `client()`, or the client class and its module-level API by name.
CLIENT_USE = re.compile(r"\.client\(\)|\bMlflowClient\b|\bmlflow\.(?:search_runs|get_run|tracking)\b")


def _client_users(package: Path) -> list[str]:
    return sorted(path.relative_to(package).as_posix() for path in package.rglob("*.py")
                  if path.parent.name != "tracking" and CLIENT_USE.search(path.read_text(encoding="utf-8")))


def test_only_tracking_holds_an_mlflow_client_so_results_cli_and_api_read_runs_through_it():
    package = ROOT / "src" / "ragsweep"
    assert _client_users(package) == [], "read runs through ragsweep.tracking's functions (tracking/runs.py)"
    planted = package / "results" / "best.py"
    assert CLIENT_USE.search(planted.read_text(encoding="utf-8").replace("tracker.download(", "tracker.client().x(")), \
        "the check would see a client call in results/"


# The MLflow tracker and the features only MLflow has (traces, the labels people give on them in its UI); the rest
# of tracking/ (a sweep's parent run, races, tables of runs, the commands' store) goes through the protocols of
# tracking/base.py, so a tracking backend is its class and its YAML.
MLFLOW_BACKEND = ["feedback_labels.py", "label_draws.py", "mlflow_lookups.py", "mlflow_store.py", "mlflow_tracker.py",
                  "store.py", "traces.py"]
MLFLOW_USE = re.compile(r"\bimport mlflow\b|\bfrom mlflow\b|\.client\(\)|\bopen_client\b")


def test_within_tracking_only_the_mlflow_backend_and_mlflows_own_features_reach_mlflow():
    tracking = ROOT / "src" / "ragsweep" / "tracking"
    users = sorted(path.name for path in tracking.glob("*.py") if MLFLOW_USE.search(path.read_text(encoding="utf-8")))
    assert users == MLFLOW_BACKEND, "read and annotate runs through tracking.base.RunStore, not MLflow's client"


def test_no_two_classes_share_a_name():
    """Two ideas under one name read as one (a report written and a question set's audit were both `Report`)."""
    defined: dict[str, list[str]] = defaultdict(list)
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                defined[node.name].append(f"{path.relative_to(ROOT / 'src')}:{node.lineno}")
    twice = {name: places for name, places in defined.items() if len(places) > 1}
    assert not twice, f"name each class for what it holds: {twice}"
