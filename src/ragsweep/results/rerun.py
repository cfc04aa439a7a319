"""Running an exported config again, as a user would, and comparing its numbers with the export's.

`ragsweep best --verify` requires every recorded metric to be equal, since the pipeline is deterministic;
`ragsweep gate` judges the drops (results.gate). A rerun's MLflow run is tagged with why it ran, so it is
told apart from a user's runs.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from ragsweep.results.exported import RerunCannotWrite, ResultsError, read_hashes, read_per_query
from ragsweep.results.corrected import corrected_entries
from ragsweep.runner.outputs import LATENCY_FILE, read_latency
from ragsweep.tracking import judges
from ragsweep.tracking.judges import JudgeInfo
from ragsweep.tracking.tags import RERUN_ENV

log = logging.getLogger(__name__)

ERROR = "ragsweep: error: "
CANNOT_WRITE = f"{ERROR}cannot write "  # a sweep's line for a folder it cannot write (`disk.cannot_write`)


@dataclass
class Rerun:
    metrics: dict[str, float]  # every metric's mean and `<metric>_std`, as the run logged them
    per_query: dict[str, dict[str, float]]  # question id -> its metrics
    judge: JudgeInfo | None = None  # the judge that scored its judged metrics; None when none ran
    corrected: dict[str, dict] = field(default_factory=dict)  # its `<metric>_corrected` entries (judge.labels)
    latency: dict[str, np.ndarray] = field(default_factory=dict)  # its latency.json: milliseconds per question
    questions: dict[str, str | None] = field(default_factory=dict)  # question id -> its sha256 (Query.sha256)


def rerun(project: Path, config_path: Path, why: str = "verify", overrides: Sequence[str] = ()) -> Rerun:
    """Run an exported config again, as a user would (`ragsweep sweep --config-name best/<name>`), with any
    `overrides`; its run is tagged `ragsweep.rerun=<why>` (verify, gate)."""
    config_name = config_path.resolve().relative_to((project / "conf").resolve()).with_suffix("").as_posix()
    with tempfile.TemporaryDirectory(prefix="ragsweep-rerun-") as output:
        command = [sys.executable, "-m", "ragsweep.cli", "sweep", "--config-name", config_name,
                   f"hydra.run.dir={output}", *overrides]
        log.info("rerunning %s", " ".join(command))
        done = subprocess.run(command, cwd=project, capture_output=True, text=True,
                              env={**os.environ, RERUN_ENV: why})
        if done.returncode != 0:
            refused = [line for line in done.stderr.splitlines() if line.startswith(CANNOT_WRITE)]
            if refused:  # the sweep's one line names the folder and the fix
                raise RerunCannotWrite(f"the rerun of {config_path} stopped: {refused[-1].removeprefix(ERROR)}")
            raise ResultsError(f"the rerun of {config_path} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        summary = json.loads((Path(output) / "metrics.json").read_text())
        per_query, questions = read_per_query(Path(output)), read_hashes(Path(output))
        timed = Path(output) / LATENCY_FILE
        latency = read_latency(timed) if timed.is_file() else {}
        ran = OmegaConf.to_container(OmegaConf.load(Path(output) / "config.yaml"), resolve=True)
    exported = OmegaConf.load(config_path)
    choices = OmegaConf.to_container(exported.hydra.runtime.choices) if OmegaConf.select(
        exported, "hydra.runtime.choices") is not None else {}
    metrics = logged_metrics(summary)
    return Rerun(metrics, per_query, judges.from_config(ran, choices, metrics), corrected_entries(summary), latency,
                 questions)


def logged_metrics(summary: dict[str, dict]) -> dict[str, float]:
    """metrics.json as MLflow has it: each metric's mean and `<metric>_std`, and a judged run's micro averages
    (`faithfulness_micro`: `{value, n, ci95}`), failure rates (`judge_failure_rate`: `{value, n}`) and estimates
    corrected by people's labels (`faithfulness_corrected`). Latency percentiles (also `{value, n, ci95}`, with a
    generator) are not compared: milliseconds never repeat exactly."""
    means = {name: values for name, values in summary.items() if "mean" in values}
    return {**{name: values["mean"] for name, values in means.items()},
            **{f"{name}_std": values["std"] for name, values in means.items()},
            **{name: values["value"] for name, values in summary.items()
               if name.endswith(("_micro", "_corrected")) or name.startswith("judge_failure_rate")}}


def compare(recorded: dict[str, float], current: dict[str, float]) -> pd.DataFrame:
    """One row per recorded metric: its recorded and current value, the drop, and whether they are equal
    (`--verify`'s bar: the pipeline is deterministic). `ragsweep gate` judges drops in results.gate."""
    rows = []
    for metric, before in recorded.items():
        now = current.get(metric, float("nan"))
        rows.append({"metric": metric, "recorded": before, "current": now, "drop": before - now, "ok": bool(now == before)})
    return pd.DataFrame(rows)
