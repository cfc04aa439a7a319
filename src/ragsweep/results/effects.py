"""`ragsweep effects`: a sweep's configurations and their per-question values, handed to the factorial model
(`results.factorial`), and its table as the command prints it and logs it to the sweep (effects.json)."""

from __future__ import annotations

import json
import logging
import math
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ragsweep.metrics import registry
from ragsweep.results.exported import ResultsError, read_per_query
from ragsweep.results.factorial import SAMPLES, Effects, estimate
from ragsweep.tracking.base import RunStore
from ragsweep.tracking.tags import ROLE_TAG
from ragsweep.tracking.runs import datasets, download_per_query, on_dataset, sweep_jobs
from ragsweep.tracking.sweep import sweep_metric, sweeps
from ragsweep.tracking.table import metric_names, param

log = logging.getLogger(__name__)

_OVERRIDE = re.compile(r",(?=[+~]*[\w./@-]+=)")


def swept_levels(labels: pd.Series, params: pd.DataFrame) -> pd.DataFrame:
    """Each configuration's level of every setting its label names (`chunker=fixed,k=3`: the sweep's overrides),
    read from its logged param (the table's `param("chunker")`) where there is one, else from the label;
    configurations whose label does not name a setting take its param, else `default`."""
    parsed = [dict(item.lstrip("+~").split("=", 1) for item in _OVERRIDE.split(str(label)) if "=" in item)
              for label in labels]
    keys = list(dict.fromkeys(key for found in parsed for key in found))
    columns = {}
    for key in keys:
        logged = params[param(key)] if param(key) in params else pd.Series(None, index=params.index)
        columns[key] = [str(value) if isinstance(value, str) or pd.notna(value) else found.get(key, "default")
                        for value, found in zip(logged, parsed, strict=True)]
    return pd.DataFrame(columns, index=range(len(parsed)))


@dataclass(frozen=True)
class SweepEffects:
    """`Effects` of one sweep's configurations on one dataset, and where they came from."""

    effects: Effects
    sweep: str  # the parent run's id
    metric: str
    dataset: str
    datasets: list[str]  # every dataset the sweep's finished jobs ran on
    asked_metric: bool  # the metric was given, not the sweep's own


def sweep_effects(tracker: RunStore, sweep: str | None = None, metric: str | None = None,
                  dataset: str | None = None, samples: int = SAMPLES, seed: int = 0) -> SweepEffects:
    """The effects of the settings a sweep varied (by default the experiment's newest sweep) on `metric` (by
    default the one its summary ranks by, `tracking.sweep.sweep_metric`). ResultsError names the flag to change."""
    parent = _parent(tracker, sweep)
    jobs = sweep_jobs(tracker, parent)
    jobs = jobs[jobs["status"] == "FINISHED"] if not jobs.empty else jobs
    if jobs.empty:
        raise ResultsError(f"--sweep {parent}: the sweep has no FINISHED job; {_others(tracker, parent)}")
    try:
        runs, name = on_dataset(jobs.reset_index(drop=True), dataset)
    except ValueError as error:
        raise ResultsError(str(error)) from None
    chosen = metric or sweep_metric(tracker, parent, runs)
    per_question = registry.names(per_question=True)
    if chosen not in per_question:
        raise ResultsError(f"--metric {chosen} has no per-question values to estimate effects from; choose one of "
                           f"{', '.join(m for m in per_question if registry.METRICS[m].quality)}")
    logged = metric_names(runs)
    if chosen not in logged or runs[chosen].isna().all():
        present = [m for m in per_question if m in logged and runs[m].notna().any()]
        raise ResultsError(f"--metric {chosen}: no configuration of sweep {parent} on dataset {name} has it; choose "
                           f"one they have: {', '.join(present)}")
    if len(runs) < 2:
        raise ResultsError(f"--sweep {parent}: its one configuration on dataset {name} ({runs['label'].iloc[0]}) has "
                           f"nothing to compare; {_others(tracker, parent)}")
    try:
        found = runs_effects(tracker, runs, chosen, samples, seed)
    except ValueError as error:
        raise ResultsError(f"--sweep {parent}, --metric {chosen}: {error}") from None
    return SweepEffects(found, parent, chosen, name, datasets(jobs), metric is not None)


def runs_effects(tracker: RunStore, runs: pd.DataFrame, metric: str, samples: int = SAMPLES,
                 seed: int = 0) -> Effects:
    """`estimate` on finished job runs (one per configuration): the settings their labels name, and `metric` per
    question from their per_query.jsonl. ValueError when they give nothing to estimate."""
    levels = swept_levels(runs["label"], runs)
    with tempfile.TemporaryDirectory(prefix="ragsweep-effects-") as folder:
        questions = [read_per_query(download_per_query(tracker, run_id, tempfile.mkdtemp(dir=folder)))
                     for run_id in runs.run_id]
    ids = sorted({question for found in questions for question, values in found.items() if metric in values})
    if not ids:
        raise ValueError(f"no configuration has {metric} per question")
    scores = np.array([[found.get(question, {}).get(metric, np.nan) for found in questions] for question in ids])
    found = estimate(scores, levels, samples, seed)
    log.info("effects on %s: %d configurations, %d of %d questions in all of them", metric, len(runs),
             found.questions, len(ids))
    return found


def _parent(tracker: RunStore, sweep: str | None) -> str:
    if sweep is None:
        newest = sweeps(tracker, most=1)
        if not newest:
            raise ResultsError(f"experiment {tracker.experiment!r} has no sweep (a parent run of `-m`); run one "
                               "first (ragsweep sweep -m +sweep=quick)")
        return newest[0]
    try:
        role = tracker.run(sweep).tags.get(ROLE_TAG)
    except ValueError:
        raise ResultsError(f"--sweep {sweep}: no such run; {_others(tracker, sweep)}") from None
    if role != "parent":
        raise ResultsError(f"--sweep {sweep} is a {role or 'plain'} run, not a sweep's parent run; "
                           f"{_others(tracker, sweep)}")
    return sweep


def _others(tracker: RunStore, than: str) -> str:
    """Where to look instead: the experiment's other sweeps, newest first."""
    others = [run_id for run_id in sweeps(tracker, most=6) if run_id != than][:5]
    return (f"the experiment's sweeps, newest first: {', '.join(others)} (--sweep ID)" if others
            else "run a sweep of several configurations (ragsweep sweep -m +sweep=quick)")


def to_json(found: SweepEffects) -> str:
    """effects.json: the table, every estimated interaction and how they were estimated."""
    effects = found.effects
    return json.dumps({"sweep": found.sweep, "metric": found.metric, "dataset": found.dataset,
                       "model": effects.model_line(), "questions": effects.questions,
                       "configurations": effects.configurations, "samples": effects.samples,
                       "effects": _records(effects.table), "interactions": _records(effects.interactions),
                       "notes": effects.notes()}, indent=2) + "\n"


def _records(table: pd.DataFrame) -> list[dict]:
    return json.loads(table.to_json(orient="records"))  # NaN as null


def decimals(values: Sequence[float]) -> int:
    """Decimal places that show the largest of `values` with three significant digits, at least 4: a cost of
    $0.000012 a question must not print as +0.0000."""
    largest = max((abs(value) for value in values if value == value), default=0.0)
    return max(4, 2 - math.floor(math.log10(largest))) if largest > 0 else 4


def display_table(effects: Effects) -> pd.DataFrame:
    """The table as people read it: the effect with its interval; what cannot be separated says so."""
    table = effects.table
    places = decimals([*table.effect, *table.low, *table.high])
    effect = [note if kind == "not separable" else f"{value:+.{places}f}"
              for value, kind, note in zip(table.effect, table.kind, table.note)]
    interval = ["" if kind == "not separable" else f"[{low:+.{places}f}, {high:+.{places}f}]"
                for low, high, kind in zip(table.low, table.high, table.kind)]
    return pd.DataFrame({"factor": table.factor, "level": table.level, "effect": effect, "95% interval": interval,
                         "questions": table.questions})
