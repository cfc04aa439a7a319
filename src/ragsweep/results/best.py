"""The best configuration of an experiment, exported as a config that reruns it, and checked by rerunning.

`conf/best/<name>.yaml` is the winning run's resolved config plus the project's `hydra:` block,
so `python sweep.py --config-name best/<name>` needs nothing else. Beside it,
`<name>.manifest.json` records what the numbers depend on (dataset and config fingerprints,
package versions, git sha) and the numbers themselves, which `--verify` and `ragsweep gate`
compare a rerun against.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from ragsweep.metrics.evaluate import METRIC_KEYS
from ragsweep.tracking.mlflow_tracker import MlflowTracker
from ragsweep.tracking.runs import finished_jobs, ranked, where

log = logging.getLogger(__name__)


class ResultsError(ValueError):
    """Nothing to rank, export or compare; the message says what to run first."""


@dataclass
class Export:
    config: Path
    manifest: Path
    table: pd.DataFrame  # the ranked candidates, best first


def best(tracker: MlflowTracker, metric: str, project: Path, name: str | None = None,
         condition: str | None = None) -> Export:
    """Rank the experiment's finished configurations by `metric` and export the winner."""
    runs = finished_jobs(tracker)
    if runs.empty:
        raise ResultsError(f"experiment {tracker.experiment!r} in {tracker.uri} has no FINISHED runs; "
                           "run a sweep first (python sweep.py -m +sweep=quick)")
    if metric not in METRIC_KEYS:
        raise ResultsError(f"--metric {metric} is not a metric; choose one of {', '.join(METRIC_KEYS)}")
    try:
        runs = ranked(where(runs, condition), metric)
    except ValueError as error:
        raise ResultsError(str(error)) from None
    if runs.empty:
        raise ResultsError(f"no FINISHED run meets --where {condition!r}")
    winner = runs.iloc[0]
    name = name or tracker.experiment
    folder = project / "conf" / "best"
    folder.mkdir(parents=True, exist_ok=True)
    config = _standalone_config(tracker, winner.run_id, project)
    config_path = folder / f"{name}.yaml"
    config_path.write_text("# @package _global_\n"  # a config under conf/best/ would otherwise nest under `best:`
                           f"# Best {metric} of experiment {tracker.experiment!r}: run {winner.run_id}.\n"
                           f"# Rerun: python sweep.py --config-name best/{name}\n" + OmegaConf.to_yaml(config))
    manifest_path = folder / f"{name}.manifest.json"
    manifest_path.write_text(json.dumps(_manifest(winner, metric, tracker), indent=2) + "\n")
    return Export(config_path, manifest_path, runs)


def rerun(project: Path, config_path: Path) -> dict[str, float]:
    """Run an exported config again, as a user would (`python sweep.py --config-name best/<name>`); its metrics."""
    config_name = config_path.resolve().relative_to((project / "conf").resolve()).with_suffix("").as_posix()
    with tempfile.TemporaryDirectory(prefix="ragsweep-rerun-") as output:
        command = [sys.executable, str(project / "sweep.py"), "--config-name", config_name, f"hydra.run.dir={output}"]
        log.info("rerunning %s", " ".join(command))
        done = subprocess.run(command, cwd=project, capture_output=True, text=True)
        if done.returncode != 0:
            raise ResultsError(f"the rerun of {config_path} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        summary = json.loads((Path(output) / "metrics.json").read_text())
    return {**{name: values["mean"] for name, values in summary.items()},
            **{f"{name}_std": values["std"] for name, values in summary.items()}}


def compare(recorded: dict[str, float], current: dict[str, float], max_drop: float = 0.0,
            exact: bool = False) -> pd.DataFrame:
    """One row per recorded metric: its recorded and current value, the drop, and whether it passes."""
    rows = []
    for metric, before in recorded.items():
        now = current.get(metric, float("nan"))
        drop = before - now
        ok = now == before if exact else drop <= max_drop + 1e-12
        rows.append({"metric": metric, "recorded": before, "current": now, "drop": drop, "ok": bool(ok)})
    return pd.DataFrame(rows)


def read_manifest(config_path: Path) -> dict:
    manifest_path = config_path.with_name(f"{config_path.stem}.manifest.json")
    if not config_path.is_file() or not manifest_path.is_file():
        raise ResultsError(f"{config_path} or its manifest {manifest_path.name} is missing; "
                           "write them with: ragsweep best --experiment <name> --metric <metric>")
    return json.loads(manifest_path.read_text())


def _standalone_config(tracker: MlflowTracker, run_id: str, project: Path):
    with tempfile.TemporaryDirectory() as folder:
        path = tracker.client().download_artifacts(run_id, "config.yaml", folder)
        config = OmegaConf.load(path)
    config.hydra = OmegaConf.load(project / "conf" / "config.yaml").hydra  # run dirs, callbacks
    return config


def _manifest(winner: pd.Series, metric: str, tracker: MlflowTracker) -> dict:
    quality = [*METRIC_KEYS, *(f"{m}_std" for m in METRIC_KEYS)]
    return {
        "experiment": tracker.experiment,
        "run_id": winner.run_id,
        "config": winner["tags.mlflow.runName"],
        "metric": metric,
        "config_fingerprint": winner.get("tags.ragsweep.config_fingerprint"),
        "dataset": winner.get("tags.dataset.name"),
        "dataset_fingerprint": winner.get("tags.dataset.fingerprint"),
        "git_sha": winner.get("tags.ragsweep.git_sha"),
        "packages": {column.removeprefix("tags.version."): winner[column]
                     for column in sorted(winner.index) if column.startswith("tags.version.")},
        "metrics": {name: float(winner[f"metrics.{name}"]) for name in quality if f"metrics.{name}" in winner},
    }
