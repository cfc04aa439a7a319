"""Reading runs back from the store as tables (`tracking.table`'s columns): a sweep's jobs, an experiment's results,
ranked.

One row per configuration: when a configuration was run more than once (`force=true`, a verify
rerun), its newest FINISHED run stands for it, so rankings never count a configuration twice.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ragsweep import per_query
from ragsweep.metrics import registry
from ragsweep.metrics.pareto import non_dominated
from ragsweep.tracking.tags import (DATASET_TAG, FINGERPRINT_TAG, LABEL_TAG, PER_QUERY_TAG, RACE_FINGERPRINT_TAG,
                                    RACE_QUESTIONS_TAG, ROLE_TAG)
from ragsweep.tracking.base import RunStore, Tracker
from ragsweep.tracking.table import metric_names, param, param_keys, runs_table, tag

DATASET = tag(DATASET_TAG)
FINGERPRINT = tag(FINGERPRINT_TAG)
RACE_QUESTIONS = tag(RACE_QUESTIONS_TAG)
RACE_FINGERPRINT = tag(RACE_FINGERPRINT_TAG)
PARETO_TAG = "ragsweep.pareto"  # on a multi-objective sweep's runs: on its front or not; on its parent: the front
GENERATOR = param("generator")


def sweep_jobs(tracker: RunStore, parent_run_id: str) -> pd.DataFrame:
    """The child runs of a sweep's parent run, plus the finished runs its skipped jobs reused, one row per
    configuration: a job that ran again after losing its node shows as its FINISHED attempt."""
    children = runs_table(tracker.runs(parent=parent_run_id))
    children["reused"] = False
    parent_tags = tracker.run(parent_run_id).tags
    reused_ids = sorted({v for k, v in parent_tags.items() if k.startswith("ragsweep.reused.")})
    if reused_ids:
        reused = runs_table(tracker.runs(run_ids=reused_ids))
        reused["reused"] = True
        children = pd.concat([children, reused], ignore_index=True)
    if children.empty or FINGERPRINT not in children:
        return children
    # a race's configuration stopped early has only its race fingerprint; one without either is its own
    key = children[FINGERPRINT].fillna(children.get(RACE_FINGERPRINT, children[FINGERPRINT]))
    attempts = children.assign(finished=children["status"] == "FINISHED", key=key.fillna(children.run_id))
    attempts = attempts.sort_values(["finished", "start_time"])
    return attempts.drop_duplicates("key", keep="last").drop(columns=["finished", "key"]).sort_index()


def failure_lines(tracker: RunStore, jobs: pd.DataFrame) -> list[str]:
    """`<config>: <last line of its traceback.txt>` for each FAILED job, so a sweep's last words say why."""
    lines = []
    with tempfile.TemporaryDirectory() as folder:
        for _, job in jobs[jobs["status"] == "FAILED"].iterrows():
            try:
                text = tracker.download(job["run_id"], "traceback.txt", folder).read_text()
                reason = text.strip().splitlines()[-1]
            except (ValueError, OSError, IndexError):  # failed before its traceback was written, or a store gone since
                reason = "no traceback.txt (see its run)"
            lines.append(f"{job['name'] or job['run_id']}: {reason}")
    return lines


def finished_jobs(tracker: RunStore) -> pd.DataFrame:
    """Every configuration's newest FINISHED job run in the experiment that ran every question (a race's
    configurations stopped early carry no config fingerprint: see `stopped_in_races`)."""
    runs = runs_table(tracker.runs(status="FINISHED", tags={ROLE_TAG: "job"}))
    if runs.empty or FINGERPRINT not in runs:
        return runs
    runs = runs[runs[FINGERPRINT].notna()]
    return runs.drop_duplicates(FINGERPRINT, keep="first").reset_index(drop=True)


def on_dataset(runs: pd.DataFrame, name: str | None = None) -> tuple[pd.DataFrame, str]:
    """The runs on dataset `name`, by default on the dataset of the first (newest) run, and that name."""
    names = _dataset_names(runs)
    if name is None:
        name = names.iloc[0]
    elif name not in set(names):
        raise ValueError(f"--dataset {name}: no FINISHED run on it; datasets: {', '.join(datasets(runs))}")
    return runs[names == name].reset_index(drop=True), name


def datasets(runs: pd.DataFrame) -> list[str]:
    return sorted(set(_dataset_names(runs)))


def _dataset_names(runs: pd.DataFrame) -> pd.Series:
    return runs[DATASET].fillna("unknown") if DATASET in runs else pd.Series("unknown", index=runs.index)


def generators(runs: pd.DataFrame) -> pd.Series:
    """Each run's generator option (`extractive`); `none` for retrieval-only runs, also those logged before
    generators."""
    return runs[GENERATOR].fillna("none") if GENERATOR in runs else pd.Series("none", index=runs.index)


def has_generator(runs: pd.DataFrame) -> pd.Series:
    """Whether each run generated answers: its generator option is not `none`, or it logged an error rate."""
    errors = runs["generation_error_rate"].notna() if "generation_error_rate" in runs else False
    return (generators(runs) != "none") | errors


def pareto_split(runs: pd.DataFrame, metrics: Sequence[str]) -> tuple[pd.DataFrame, pd.Series]:
    """The FINISHED runs that ran every question (a race's stopped ones carry no config fingerprint) and have every
    one of `metrics`, and which of them are on the Pareto front over those metrics, each in its registry direction
    (`metrics.pareto.non_dominated`, the front `best --pareto` exports and the report draws)."""
    columns = list(metrics)
    if runs.empty or not set(columns) <= set(metric_names(runs)):
        return runs.iloc[0:0], pd.Series(dtype=bool)
    whole = runs[FINGERPRINT].notna() if FINGERPRINT in runs else pd.Series(True, index=runs.index)
    done = runs[(runs["status"] == "FINISHED") & whole & runs[columns].notna().all(axis=1)]
    directions = [registry.metric(metric).direction for metric in metrics]
    return done, pd.Series(non_dominated(done[columns].to_numpy(float), directions), index=done.index)


def download_per_query(tracker: Tracker, run_id: str, folder: str) -> Path:
    """A run's per_query.jsonl (or, where it was large, per_query.jsonl.gz) copied under `folder`; ValueError
    when the run has neither."""
    for name in per_query.NAMES:
        try:
            return tracker.download(run_id, name, folder)
        except ValueError:
            continue
    tags = tracker.run(run_id).tags
    if tags.get(PER_QUERY_TAG) == "dropped":
        raise ValueError(f"run {run_id}'s {per_query.NAME} was dropped when its sweep ended (tracking.per_query_top "
                         f"kept it for the sweep's best runs only); run its configuration ({tags.get(LABEL_TAG)}) "
                         "again with +force=true to have it")
    raise ValueError(f"run {run_id} has no artifact {per_query.NAME} in {tracker.uri}")


def ranked(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Runs best first by `metric` in its registered direction; runs without it (failed) last."""
    if metric not in metric_names(runs):
        raise ValueError(f"no run has the metric {metric!r}; metrics present: {', '.join(metric_names(runs))}")
    lower_first = registry.METRICS[metric].direction == "minimize" if metric in registry.METRICS else False
    return runs.sort_values([metric, "name"], ascending=[lower_first, True], na_position="last").reset_index(drop=True)


def default_ranking_metric(runs: pd.DataFrame) -> str:
    """The metric to rank by when none is asked: the one the stage the runs vary moves. Runs that differ in their
    generator or its prompt retrieve the same passages (token_iou ties), so they rank by answer_f1; runs that differ
    in their reranker, by ndcg (the order within the k); otherwise token_iou. Never a judged metric."""
    varied = {key for key in param_keys(runs) if runs[param(key)].nunique(dropna=False) > 1}
    for stage, metric in registry.RANKING_BY_VARIED_STAGE.items():
        if any(key == stage or key.startswith(f"{stage}.") for key in varied) and metric in metric_names(runs):
            return metric
    return registry.DEFAULT_RANKING


def tie_note(runs: pd.DataFrame, metric: str) -> str | None:
    """A line when the best value of `metric` is shared, so the first row of the tie is not taken as the winner."""
    values = ranked(runs, metric)[metric].dropna()
    if len(values) < 2 or values.iloc[0] != values.iloc[1]:
        return None
    return (f"note: the top {int((values == values.iloc[0]).sum())} configurations tie on {metric} "
            f"({values.iloc[0]:.4f}) and are listed by name; rank by another metric to tell them apart")


def unjudged_summary_table(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The columns a user ranks a sweep by: rank, config, status, the optimized metric first, then the rest; its
    judged columns are added by `tracking.judges.summary_table`, the table every command shows."""
    runs = ranked(runs, metric)
    ran = race_questions(runs)
    if ran is not None:  # a race: the configurations that ran every question are ranked, those stopped follow
        runs, ran = _ran_everything_first(runs, ran)
    logged = metric_names(runs)
    metrics = [metric, *[m for m in registry.summary_columns("retrieval") if m != metric and m in logged]]
    if has_generator(runs).any():  # a retrieval-only table keeps its columns
        metrics += [m for m in registry.summary_columns("generation") if m != metric and m in logged]
    if "context_relevance_judged" in logged:  # a relevance judge: the span truth, its view, their agreement
        metrics += [m for m in registry.summary_columns("relevance") if m not in metrics and m in logged]
    table = pd.DataFrame({"rank": range(1, len(runs) + 1), "config": runs["label"], "status": runs["status"]})
    if ran is not None:
        full = (ran == ran.max()).to_numpy()
        table["rank"] = [str(rank) if whole else "stopped" for rank, whole in zip(range(1, len(runs) + 1), full)]
        table["questions"] = ran.to_numpy()
    if has_generator(runs).any():
        table["generator"] = generators(runs)
    for name in metrics:
        table[name] = runs[name].round(4)
    if "reused" in runs:
        table["reused"] = runs["reused"].map({True: "yes", False: ""})
    table["run_id"] = runs["run_id"]
    return table


def race_questions(runs: pd.DataFrame) -> pd.Series | None:
    """How many questions each run of a race ran (a run outside a race counts as all of them); None when no
    run was raced."""
    if RACE_QUESTIONS not in runs or runs[RACE_QUESTIONS].isna().all():
        return None
    ran = pd.to_numeric(runs[RACE_QUESTIONS], errors="coerce")
    return ran.fillna(ran.max()).astype(int)


def _ran_everything_first(runs: pd.DataFrame, ran: pd.Series) -> tuple[pd.DataFrame, pd.Series]:
    order = (ran != ran.max()).to_numpy().argsort(kind="stable")
    return runs.iloc[order].reset_index(drop=True), ran.iloc[order].reset_index(drop=True)


def markdown(table: pd.DataFrame) -> str:
    """A GitHub-style markdown table (no extra dependency)."""
    cells = [[str(c) for c in table.columns]]
    cells += [["" if pd.isna(v) else str(v) for v in row] for row in table.to_numpy()]
    widths = [max(len(row[i]) for row in cells) for i in range(len(table.columns))]
    lines = ["| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (width + 2) for width in widths) + "|")
    return "\n".join(lines) + "\n"
