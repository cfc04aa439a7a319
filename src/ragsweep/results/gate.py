"""`ragsweep gate`: is the current configuration still as good as the exported baseline?

Two checks per guarded metric. The mean may drop by at most `--max-drop`: relative to the recorded
value by default (`5%`), since an absolute 0.02 on a metric near 0.03 lets through a 63% drop. And
a paired bootstrap over the baseline's questions (the one the report uses) must not find the
current configuration worse at `--significance`, which catches a small drop every question shares.
An answer metric exists only for questions that got an answer and have reference answers, so its
bootstrap pairs the questions that have it in both runs, and the table says how many. Judged metrics
are gated the same way, but only between runs scored by the same judge: another judge (or threshold)
puts the same answers on another scale, so the gate refuses rather than read a change of judge as a
change of quality. Micro averages (`faithfulness_micro`) have no per-question values to pair.

Both runs must have answered the same questions: a question removed, added or reworded since the baseline moves
the means with nothing in the pipeline changed, so the gate fails naming them (results.question_sets), or, told
`--on-changed-questions=compare-common`, gates the means and the bootstrap on the questions both have unchanged
(`on_compared`).

Faithfulness and groundedness corrected by people's labels in both runs, with equal error rates (the same
judge and labelled pool: results.corrected), are gated by their corrected paired difference instead: the
same two checks, on what the labels say the judge's numbers mean. The corrected current − baseline may drop
by at most `--max-drop` of the baseline's corrected value, and its normal interval must not find it worse
at `--significance` (its upper end at confidence 1 - significance below 0).

Latency percentiles (`latency_ms_p95`, ...) are one value per run, and a cached stage keeps the milliseconds
measured when it was computed, so a latency gate times the current configuration afresh: its rerun computes
search, rerank and answers again (`cache.fresh`), or `--run` names a run whose latency.json it reads. The two
runs' percentiles are compared by a bootstrap over their latency samples, each resampled on its own (Efron &
Tibshirani 1993, ch. 16, two-sample problem): the p-value is the share of resampled pairs in which the current
percentile is no worse. Timings vary between two runs of the same code, so a percentile fails only when it rose
by more than `--max-drop` and the bootstrap finds it worse at `--significance`. `generation_error_rate` guarded
by `--metrics` fails on a rise beyond `--max-drop` or one that Fisher's exact test (one-sided) finds at
`--significance`; unguarded, a rise is a warning.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ragsweep.metrics import registry
from ragsweep.metrics.aggregate import paired_bootstrap
from ragsweep.results.best import RANKABLE
from ragsweep.results.exported import ResultsError, read_hashes, read_per_query
from ragsweep.results.question_sets import Compared, means_on
from ragsweep.results.gate_rows import MaxDrop, corrected_row, failure_reasons, gate_row, latency_row, rate_row
from ragsweep.results.corrected import (CORRECTABLE, ComparedRun, CorrectedDifference, corrected_entries,
                                       paired_corrected)
from ragsweep.tracking.judges import JUDGED_RECORDED, JudgeInfo, auc_text, from_params
from ragsweep.tracking.tags import FINGERPRINT_TAG, RACE_QUESTIONS_TAG, STOPPED_ROUND_TAG
from ragsweep.tracking.base import RunStore
from ragsweep.runner.outputs import LATENCY_FILE, read_latency
from ragsweep.tracking.runs import download_per_query

TIMED = registry.names(stage="latency")  # one value per run, compared on fresh timings (`latency_row`)
RATES = ("generation_error_rate",)  # a share of questions, compared by Fisher's exact test (`rate_row`)
PerQuestion = dict[str, dict[str, float]]  # question id -> its metrics
FRESH_TIMING = "+cache.fresh=[retrieval,rerank,answers]"  # the stages whose milliseconds a latency gate retakes


def guarded_metrics(text: str | None, manifest: dict) -> list[str]:
    """The metrics `--metrics` names (default: the baseline's ranking metric): ones with per-question values, a
    latency percentile, or `generation_error_rate`."""
    recorded = [name for name in RANKABLE if name in manifest["metrics"] and registry.METRICS[name].per_question]
    recorded += [name for name in RATES if name in manifest["metrics"]]
    names = [name.strip() for name in text.split(",")] if text else [manifest["metric"]]
    pooled = [name for name in names if name in RANKABLE and not registry.METRICS[name].per_question]
    if pooled:
        raise ResultsError(f"--metrics {','.join(pooled)}: one value per run (a micro average pools every claim), "
                           f"so it has no per-question values for the paired bootstrap; guard "
                           f"{','.join(name.removesuffix('_micro').removesuffix('_ppi') for name in pooled)} instead")
    unknown = [name for name in names if name not in recorded and name not in TIMED]
    if unknown:
        raise ResultsError(f"--metrics {','.join(unknown)}: not a metric the baseline recorded per question or an "
                           f"error rate it recorded, nor a latency percentile (latency_ms_p95, search_ms_p50, ...); "
                           f"choose from {', '.join(recorded)}")
    return names


def job_result(tracker: RunStore, run_id: str, what: str, hint: str = "") -> dict:
    """A FINISHED job run's label, fingerprint, metrics, per-question metrics, its questions' hashes (`questions`)
    and `<metric>_corrected` entries;
    ResultsError naming `what` when the store has no such run, it did not finish, or it has no per_query.jsonl
    (a sweep's parent run)."""
    try:
        run = tracker.run(run_id)
        if run.status != "FINISHED":
            raise ValueError(f"run {run_id} is {run.status}; gate a FINISHED job run")
        if run.tags.get(STOPPED_ROUND_TAG, "none") != "none":
            raise ValueError(f"run {run_id} was stopped in a race after {run.tags.get(RACE_QUESTIONS_TAG)} "
                             "questions; gate a run that ran every question (the race's winner, or rerun it)")
        with tempfile.TemporaryDirectory(prefix="ragsweep-gate-") as folder:
            path = download_per_query(tracker, run_id, folder)
            per_query, questions = read_per_query(path), read_hashes(path)
            labelled = any(name.endswith("_corrected") for name in run.metrics)
            summary = json.loads(tracker.download(run_id, "metrics.json", folder).read_text()) if labelled else {}
    except ValueError as error:
        raise ResultsError(f"{what}: {error}" + (f"; {hint}" if hint else "")) from None
    return {"run_id": run_id, "status": run.status, "tags": dict(run.tags), "metrics": dict(run.metrics),
            "params": dict(run.params), "per_query": per_query, "questions": questions,
            "fingerprint": run.tags.get(FINGERPRINT_TAG), "label": run.label or None,
            "judge": from_params(run.params, run.metrics), "corrected": corrected_entries(summary)}


def corrections(manifest: dict, current: dict, baseline: dict[str, dict[str, float]], metrics: list[str]
                ) -> dict[str, CorrectedDifference]:
    """current − baseline corrected by people's labels, per guarded faithfulness or groundedness: from the
    manifest's `corrected` entries and the current run's (`job_result`, `Rerun.corrected`)."""
    now = ComparedRun("current", current.get("corrected") or {}, current["per_query"])
    before = ComparedRun("baseline", manifest.get("corrected") or {}, baseline)
    return {metric: paired_corrected(metric, now, before) for metric in metrics if metric in CORRECTABLE}


def judge_line(manifest: dict, current: JudgeInfo | None, metrics: list[str]) -> str | None:
    """The judge behind the guarded judged metrics, to print above the table; None when none is guarded.

    Raises ResultsError (one line, naming both judges) when the baseline and the current run were scored
    by different judges: their judged metrics are on different scales, so no drop or gain between them means
    anything."""
    judged = [name for name in metrics if name in JUDGED_RECORDED]
    if not judged:
        return None
    recorded = JudgeInfo.from_dict(manifest["judge"]) if manifest.get("judge") else None
    if recorded and current and not recorded.same_judge(current):
        raise ResultsError(f"--metrics {','.join(judged)}: the baseline was judged by {recorded} and the current run "
                           f"by {current} ({recorded.differences(current)}); judged metrics of different judges do "
                           "not compare, so gate them against a run of the same judge or export a new baseline")
    what = ", ".join(judged)
    if recorded is None:
        return (f"{what} judged by {current or 'no judge'} now; the baseline's manifest names no judge (exported "
                "before judges were recorded: export it again with `ragsweep best` to have it checked)")
    if current is None:
        return f"{what} judged by {recorded} in the baseline; the current run was not judged"
    now = "" if current.auc == recorded.auc else f" (recorded with {auc_text(recorded)}, now {auc_text(current)})"
    return f"{what} judged by {recorded} in both runs{now}"


def other_config(current: dict, manifest: dict, allowed: bool) -> bool:
    """Whether `current` is another configuration than the baseline's; ResultsError unless `allowed`."""
    if current["fingerprint"] == manifest["config_fingerprint"]:
        return False
    if not allowed:
        raise ResultsError(f"--run {current['run_id']} is another configuration ({current['label']}, fingerprint "
                           f"{str(current['fingerprint'])[:12]}) than the baseline ({manifest.get('label')}, "
                           f"{manifest['config_fingerprint'][:12]}); pass --allow-other-config to gate it anyway")
    return True


def on_compared(recorded: dict[str, float], current: dict, baseline: PerQuestion, compared: Compared
                ) -> tuple[dict[str, float], dict[str, float], PerQuestion, PerQuestion]:
    """The recorded and current means and each run's per-question metrics on the questions `compared` keeps: as they
    are when both runs have the same questions; else each per-question metric's mean over the questions both have
    unchanged, so the drop limit and the bootstrap look at the same questions."""
    if not compared.changes.differ:
        return recorded, current["metrics"], baseline, current["per_query"]
    before = {question: baseline[question] for question in compared.questions}
    after = {question: current["per_query"][question] for question in compared.questions}
    return ({**recorded, **means_on(before, compared.questions)},
            {**current["metrics"], **means_on(after, compared.questions)}, before, after)


def gate_table(recorded: dict[str, float], current: dict[str, float], baseline: dict[str, dict[str, float]],
               now: dict[str, dict[str, float]], metrics: list[str], max_drop: MaxDrop, significance: float,
               samples: int = 10_000, corrected: Mapping[str, CorrectedDifference] | None = None,
               latency: tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]] | None = None) -> pd.DataFrame:
    """One row per metric: recorded and current mean, change (absolute and relative), p-value, verdict,
    and `paired`, the questions its bootstrap resampled.

    `baseline` and `now` map question id -> metrics; the bootstrap pairs the baseline's questions
    with the same questions of the current run, those that have the metric in both (an answer metric
    is missing where generation failed or a question has no reference answer). A metric with a corrected
    difference in `corrected` (`corrections`) is gated by it instead, and its row names its labels. A latency
    percentile is gated on `latency`, the baseline's and the current run's samples (`latency_row`), an error
    rate on its questions (`rate_row`).
    """
    shared = [question for question in baseline if question in now]
    if not shared:
        raise ResultsError("the current run answered none of the baseline's questions (another dataset?); "
                           "gate a run on the baseline's dataset")
    usable = {metric: found for metric, found in (corrected or {}).items() if found.difference is not None}
    rows = []
    for metric in metrics:
        if metric in usable:
            rows.append(corrected_row(usable[metric], max_drop, significance))
            continue
        if metric in TIMED:
            timing, empty = metric.rsplit("_p", 1)[0], np.zeros(0)
            baseline_ms, current_ms = (samples_of.get(timing, empty) for samples_of in latency or ({}, {}))
            rows.append(latency_row(metric, baseline_ms, current_ms, max_drop, significance, samples))
            continue
        if metric in RATES:
            rows.append(rate_row(metric, (recorded[metric], len(baseline)), (current.get(metric, math.nan), len(now)),
                                 max_drop, significance))
            continue
        before, after = recorded[metric], current.get(metric, math.nan)
        paired = [q for q in shared if metric in baseline[q] and metric in now[q]]
        test = (paired_bootstrap(np.array([baseline[q][metric] for q in paired]),
                                 np.array([now[q][metric] for q in paired]), samples)
                if paired else {"difference": math.nan, "p_value": math.nan})
        failures = (failure_reasons(registry.metric(metric), before, after, test, max_drop, significance)
                    if paired or math.isnan(after)
                    else [f"no question has {metric} in both runs"])
        rows.append({**gate_row(metric, before, after, test["p_value"], failures, len(paired)),
                     **({"labels": ""} if usable else {})})
    return pd.DataFrame(rows)


def latency_samples(tracker: RunStore, run_id: str, what: str) -> dict[str, np.ndarray]:
    """A job run's latency.json: each timing's milliseconds per question; ResultsError naming `what` when the run
    has none (logged before runs kept their samples: run it again)."""
    try:
        with tempfile.TemporaryDirectory(prefix="ragsweep-gate-") as folder:
            return read_latency(tracker.download(run_id, LATENCY_FILE, folder))
    except ValueError as error:
        raise ResultsError(f"{what}: {error}; a latency gate needs the milliseconds behind the percentiles, which "
                           "runs keep since latency.json was added: run the configuration again") from None


_RATES = {"generation_error_rate": "more questions failed to generate, and the answer metrics above leave them out",
          "judge_failure_rate": "more judge calls failed, and the judged metrics above leave them out"}


def error_rate_note(recorded: dict[str, float], current: dict[str, float], guarded: Sequence[str] = ()) -> str | None:
    """A line on `generation_error_rate` when either run generated answers, and one on `judge_failure_rate`
    when either was judged, each flagged when it rose: failed questions (calls) leave the answer (judged)
    metrics' means, so a rise can hide behind steady metrics. A rate in `guarded` has its own gate row."""
    lines = []
    for name, why in _RATES.items():
        before, after = recorded.get(name), current.get(name)
        if (before is None and after is None) or name in guarded:
            continue
        show = lambda value: "none" if value is None else f"{value:.4f}"  # noqa: E731
        rose = after is not None and after > (before or 0.0) + 1e-12
        fails = f"; --metrics {name} makes a rise fail the gate" if name in RATES else ""
        lines.append(f"{'WARNING: ' if rose else ''}{name} (lower is better): recorded {show(before)}, "
                     f"current {show(after)}" + (f"; it rose: {why}{fails}" if rose else ""))
    return "\n".join(lines) or None


