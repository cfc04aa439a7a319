"""The judged runs whose claims `ragsweep labels sample` draws from: read through `RunStore`, whichever store holds
them (placing the draw on traces is MLflow's: `RunStore.place_draw`)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from ragsweep import per_query
from ragsweep.numbers import finite_number
from ragsweep.tracking.base import RunStore
from ragsweep.tracking.runs import download_per_query, finished_jobs
from ragsweep.tracking.table import param, tag
from ragsweep.tracking.tags import JUDGE_TAG


@dataclass(frozen=True)
class JudgedRun:
    """A configuration's newest FINISHED run that a judge scored, and its per_query.jsonl lines."""

    run_id: str
    label: str
    judge: str
    threshold: float
    records: tuple[dict, ...]


def judged_runs(tracker: RunStore) -> list[JudgedRun]:
    """Every configuration's newest FINISHED job run tagged with its judge (`ragsweep.judge`), by run id.

    Raises:
        ValueError: a judged run without the `judge.threshold` param or the per_query.jsonl artifact.
    """
    runs = finished_jobs(tracker)
    column = tag(JUDGE_TAG)
    if runs.empty or column not in runs:
        return []
    runs = runs[runs[column].notna()].sort_values("run_id")
    found = []
    with tempfile.TemporaryDirectory() as folder:
        for _, run in runs.iterrows():
            threshold = finite_number(run.get(param("judge.threshold")))  # a run without it reads as NaN
            if threshold is None:
                raise ValueError(f"run {run['run_id']} logged no numeric judge.threshold param: rerun its "
                                 "configuration with this ragsweep (python sweep.py ... +force=true)")
            (Path(folder) / run["run_id"]).mkdir()
            path = download_per_query(tracker, run["run_id"], str(Path(folder) / run["run_id"]))
            records = tuple(per_query.records(path))
            found.append(JudgedRun(run["run_id"], str(run["label"]), str(run[column]), threshold, records))
    return found
