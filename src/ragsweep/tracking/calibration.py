"""`ragsweep calibrate` in the store: one run per calibrated judge in the experiment `calibration`.

The run's name is the judge's; its params are the calibrated threshold, the claims files and the
judge's settings (`judge.<key>`); its metrics the held-out agreement and the in-sample numbers of the
fitting set, overall and per kind of claim (`auc_<kind>`, `accuracy_<kind>`); its artifact the
`calibration/<judge>.json` written beside it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsweep.tracking.base import Tracker

if TYPE_CHECKING:
    from ragsweep.judging.calibration.calibrate import Calibration, CrossCorpus

EXPERIMENT = "calibration"
SUMMARY = ("auc", "balanced_accuracy", "f1", "failure_rate", "verdict_failure_rate", "seconds_per_claim", "load_s")


def log_calibration(tracker: Tracker, result: Calibration, path: Path, cross: CrossCorpus | None = None) -> str:
    """Log `result` (and with `cross` its held-out figures: `heldout_auc`, the lower of the two, and each
    direction's `heldout_auc_<i>` and `heldout_balanced_accuracy_<i>`) and its json file `path` as a new run of
    `tracker`'s experiment (`EXPERIMENT`)."""
    params = {"judge": result.judge, "threshold": result.threshold, "claims_file": result.claims_file,
              "claims": result.n, **_flat(result.config, "judge.")}
    metrics = calibration_metrics(result)
    if cross is not None:
        params["heldout_file"] = cross.in_sample[1].claims_file
        metrics["heldout_auc"] = cross.auc
        for i, held in enumerate(cross.held_out, start=1):
            params[f"heldout_{i}"] = f"{Path(held.fitted_on).stem} -> {Path(held.tested_on).stem}"
            metrics[f"heldout_auc_{i}"], metrics[f"heldout_balanced_accuracy_{i}"] = held.auc, held.balanced_accuracy
    with tracker.start_run(result.judge, params, {"ragsweep.judge": result.judge}) as run_id:
        tracker.log_metrics(metrics)
        tracker.log_artifacts(path)
    return run_id


def calibration_metrics(result: Calibration) -> dict[str, float]:
    """The summary numbers, then `auc_<kind>` and `accuracy_<kind>` for each kind that has them."""
    metrics = {name: float(getattr(result, name)) for name in SUMMARY}
    for kind in result.kinds:
        name = re.sub(r"[^\w.\- /]", "_", kind.kind) or "none"  # MLflow's allowed metric-name characters
        if kind.auc is not None:
            metrics[f"auc_{name}"] = kind.auc
        if kind.accuracy is not None:
            metrics[f"accuracy_{name}"] = kind.accuracy
    return metrics


def _flat(config: dict[str, Any], prefix: str) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
