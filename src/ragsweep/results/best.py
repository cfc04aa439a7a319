"""The best configuration of an experiment, exported as a config that reruns it, and checked by rerunning.

`conf/best/<name>.yaml` is the winning run's resolved config plus the project's `hydra:` block,
so `python sweep.py --config-name best/<name>` needs nothing else; it also carries the winner's label
and group choices, so that rerun is named and filterable like the winner. Beside it,
`<name>.manifest.json` records what the numbers depend on (dataset and config fingerprints,
package versions, git sha) and the numbers themselves, which `--verify` and `ragsweep gate`
compare a rerun against. `<name>.per_query.jsonl` holds the winner's metrics per question (id, the sha256 of
the question's text, references and reference answers, and metrics, one line each, so a review diff is per
question; the spans stay in the store), which the gate's paired bootstrap needs, and by which it tells a changed
question set (results.question_sets): committed with the config, it lets CI gate without the MLflow store.
The manifest records its sha256, so an edited or stale file is refused rather than trusted.
A judged winner's manifest also names its judge (option, class, scoring settings, AUC): judged metrics
compare only under the same judge, which the gate checks. A winner corrected by people's labels (`judge.labels`)
keeps its `<metric>_corrected` entries with their error rates in the manifest, so the gate can correct its
paired difference too; ranked by faithfulness or groundedness, such runs rank by the corrected value
(results.corrected).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from ragsweep.metrics import registry
from ragsweep.results.corrected import (ComparedRun, CorrectedDifference, corrected_entries, paired_corrected,
                                       ranking_metric)
from ragsweep.tracking import judges
from ragsweep.tracking.judges import JUDGE_HINT, JUDGED_RANKABLE
from ragsweep.packaged import PACKAGED_CONF
from ragsweep.runner.entry import conf_dirs, ensure_project_config
from ragsweep.identity import LABEL_KEY, group_choices
from ragsweep.runner.racing.rounds import RACE_KEY
from ragsweep.tracking.base import RunStore
from ragsweep.tracking.conditions import where
from ragsweep.tracking.runs import (datasets, default_ranking_metric, download_per_query, finished_jobs, on_dataset,
                                    ranked)
from ragsweep.tracking.table import param, row_metrics, row_tags
from ragsweep.tracking.tags import (DATASET_FINGERPRINT_TAG, DATASET_TAG, FINGERPRINT_TAG, GIT_SHA_TAG,
                                    VERSION_TAG)
from ragsweep.per_query import HASH
from ragsweep.results.exported import ResultsError, normalised_sha256, questions_file, read_hashes, read_per_query

# answer metrics only where a generator ran, judged metrics only where a judge did
RANKABLE = registry.names(rankable=True)
# what --verify requires equal and the gate can read: deterministic numbers (latency is not one of them); the
# judge's AUC is a setting of the judge, compared with the judge (JudgeInfo), not a result of the run
RECORDED = tuple(name for name in registry.names(deterministic=True) if name != "judge_auc")


@dataclass
class Export:
    config: Path
    manifest: Path
    questions: Path  # the winner's per-question metrics, which `ragsweep gate` reads
    table: pd.DataFrame  # the ranked candidates, best first, with their `label`
    dataset: str  # the dataset they ran on
    datasets: list[str]  # every dataset the experiment has FINISHED runs on
    metric: str  # what they are ranked by
    ranked_by: str  # `metric`, or `<metric>_corrected` when people's labels correct every run's
    comparison: CorrectedDifference | None = None  # winner − runner-up, corrected, when ranked by the correction


@dataclass
class Candidates:
    runs: pd.DataFrame  # best first, one row per configuration, with a `label` column
    dataset: str
    datasets: list[str]
    metric: str  # what they are ranked by: asked for, or `default_ranking_metric` of the runs
    ranked_by: str  # the column they are sorted on: `metric`, or its corrected value (results.corrected)


def candidates(tracker: RunStore, metric: str | None, dataset: str | None = None,
               condition: str | None = None) -> Candidates:
    """The experiment's finished configurations on one dataset (by default the newest run's), filtered and ranked
    by `metric` (None: the metric of the stage they vary, `default_ranking_metric`).

    Runs on different datasets answer different questions, so they are never ranked against each other.
    """
    if metric is not None and metric not in RANKABLE:
        by_stage = {stage: ", ".join(registry.names(stage=stage, rankable=True))
                    for stage in ("retrieval", "relevance", "answer", "judged")}
        raise ResultsError(f"--metric {metric} is not a metric to rank by; choose one of {by_stage['retrieval']}, "
                           f"{by_stage['relevance']}, or with a generator {by_stage['answer']}, or with a generator "
                           f"and a judge {by_stage['judged']}")
    every, runs, name = finished_on_dataset(tracker, dataset, condition)
    try:
        metric = metric or default_ranking_metric(runs)
        runs = ranked(runs, metric)
        ranked_by = ranking_metric(runs, metric)
        runs = ranked(runs, ranked_by)
    except ValueError as error:
        raise ResultsError(str(error)) from None
    if runs.empty:
        raise ResultsError(f"no FINISHED run on dataset {name} meets --where {condition!r}")
    if pd.isna(runs[metric].iloc[0]):  # ranked puts runs without it last: here, none has it
        raise ResultsError(f"no FINISHED run on dataset {name} has {metric}: {needs(metric)}")
    judges.warn_mixed(runs, metric)
    return Candidates(runs, name, datasets(every), metric, ranked_by)


def finished_on_dataset(tracker: RunStore, dataset: str | None, condition: str | None
                        ) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The experiment's FINISHED job runs, those on one dataset (by default the newest run's) that meet `--where`
    `condition`, and that dataset's name; ResultsError when there are none or the dataset or condition is bad."""
    every = finished_jobs(tracker)
    if every.empty:
        raise ResultsError(f"experiment {tracker.experiment!r} in {tracker.uri} has no FINISHED runs; "
                           "run a sweep first (ragsweep sweep -m +sweep=quick)")
    try:
        runs, name = on_dataset(every, dataset)
        return every, where(runs, condition), name
    except ValueError as error:
        raise ResultsError(str(error)) from None


def needs(metric: str) -> str:
    """What a run must have done to have `metric`."""
    if metric.startswith("citation_"):
        return ("citation metrics need a judge and a generator prompted to cite its passages "
                "(python sweep.py -m generator=llama_cpp generator.prompt=qa_cite judge=lexical)")
    if metric in JUDGED_RANKABLE:
        return JUDGE_HINT
    if metric == "context_relevance_judged":
        return "it needs a relevance judge (python sweep.py relevance_judge=span_trained)"
    if metric == "context_relevance":
        return "no run has a retrieved passage labelled by the span rule (holds half a reference, or overlaps none)"
    stage = registry.METRICS[metric].stage if metric in registry.METRICS else None
    if stage == "judged":  # a judge's failure rates and AUC
        return JUDGE_HINT
    if stage == "relevance":
        return "it needs a relevance judge (python sweep.py relevance_judge=span_trained)"
    return ("answer metrics need a generator with reference answers "
            "(ragsweep sweep -m +sweep=quick generator=extractive)")


def best(tracker: RunStore, metric: str | None, project: Path, name: str | None = None,
         condition: str | None = None, dataset: str | None = None) -> Export:
    """Rank the experiment's finished configurations on one dataset by `metric` (None: see `candidates`) and
    export the winner."""
    found = candidates(tracker, metric, dataset, condition)
    metric = found.metric
    winner = found.runs.iloc[0]
    written = export(tracker, winner, metric, project, name or tracker.experiment,
                     f"Best {metric} of experiment {tracker.experiment!r} on dataset {found.dataset}")
    comparison = None
    if found.ranked_by != metric and len(found.runs) > 1 and not pd.isna(found.runs[metric].iloc[1]):
        runner_up = found.runs.iloc[1]
        corrected, per_query, _ = _job_files(tracker, runner_up, "the runner-up")
        comparison = paired_corrected(metric, ComparedRun(winner.label, written.corrected, written.per_query),
                                      ComparedRun(runner_up.label, corrected, per_query))
    return Export(written.config, written.manifest, written.questions, found.runs, found.dataset, found.datasets,
                  metric, found.ranked_by, comparison)


@dataclass
class Written:
    """The three files of one export, and what they were made from."""

    config: Path
    manifest: Path
    questions: Path
    corrected: dict  # the run's `<metric>_corrected` entries (empty unless people's labels corrected it)
    per_query: dict[str, dict[str, float]]


def export(tracker: RunStore, run: pd.Series, metric: str, project: Path, name: str, title: str,
           extra: dict | None = None) -> Written:
    """Write `conf/best/<name>.yaml` (the run's config, which reruns it), its manifest (`metric`: what the gate
    guards by default; `extra`: more entries) and its per-question metrics. `title` heads the config: why it was
    exported."""
    folder = project / "conf" / "best"
    config, choices = _standalone_config(tracker, run, project)
    corrected, per_query, hashes = _job_files(tracker, run, f"run {run.run_id} ({run.label})")
    questions = "".join(json.dumps({"id": question, **({HASH: hashes[question]} if hashes.get(question) else {}),
                                    "metrics": metrics}) + "\n" for question, metrics in per_query.items())
    folder.mkdir(parents=True, exist_ok=True)
    config_path = folder / f"{name}.yaml"
    ensure_project_config(project)  # so that `ragsweep sweep` here finds conf/best/
    config_path.write_text("# @package _global_\n"  # a config under conf/best/ would otherwise nest under `best:`
                           f"# {title}: {run.label} (run {run.run_id}).\n"
                           f"# Rerun: ragsweep sweep --config-name best/{name}\n" + OmegaConf.to_yaml(config))
    questions_path = questions_file(config_path)
    questions_path.write_text(questions)
    manifest = {**_manifest(run, metric, tracker, choices),
                "per_query": {"file": questions_path.name, "questions": questions.count("\n"),
                              "sha256": normalised_sha256(questions_path)},
                **({"corrected": corrected} if corrected else {}),  # what the gate corrects its difference by
                **(extra or {})}
    manifest_path = folder / f"{name}.manifest.json"
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return Written(config_path, manifest_path, questions_path, corrected, per_query)


def _job_files(tracker: RunStore, run: pd.Series, what: str
               ) -> tuple[dict, dict[str, dict[str, float]], dict[str, str | None]]:
    """A job run's `<metric>_corrected` entries of its metrics.json (read only when it logged one), its
    per-question metrics and its questions' hashes."""
    corrected = [name for name in row_metrics(run) if name.endswith("_corrected")]
    try:
        with tempfile.TemporaryDirectory(prefix="ragsweep-best-") as folder:
            path = download_per_query(tracker, run.run_id, folder)
            per_query, hashes = read_per_query(path), read_hashes(path)
            summary = (json.loads(tracker.download(run.run_id, "metrics.json", folder).read_text())
                       if corrected else {})
    except ValueError as error:
        raise ResultsError(f"{what}: {error}") from None
    return corrected_entries(summary), per_query, hashes


def _standalone_config(tracker: RunStore, winner: pd.Series, project: Path) -> tuple[DictConfig, dict[str, str]]:
    """The winner's resolved config, its label (so the rerun is named like it) and the project's `hydra:` block,
    whose `runtime.choices` carry the winner's group options, which a flat config has no defaults list to give."""
    with tempfile.TemporaryDirectory() as folder:
        path = tracker.download(winner.run_id, "config.yaml", folder)
        config = OmegaConf.load(path)
    config.pop(RACE_KEY, None)  # a race's winner reruns as a plain run of every question
    config[LABEL_KEY] = winner.label
    config.hydra = _hydra_block(project)  # run dirs, callbacks
    groups = {entry.name for folder in conf_dirs(project) for entry in folder.iterdir() if entry.is_dir()}
    choices = group_choices({group: winner.get(param(group)) for group in groups
                             if isinstance(winner.get(param(group)), str)})
    if choices:
        config.hydra.runtime = {"choices": choices}
    return config, choices


def _hydra_block(project: Path) -> DictConfig:
    """The `hydra:` settings a run of the project gets: the packaged defaults', then the project's own."""
    files = [PACKAGED_CONF / "ragsweep.yaml", project / "conf" / "config.yaml"]
    blocks = [OmegaConf.load(path).get("hydra") for path in files if path.is_file()]
    return OmegaConf.merge(*[block for block in blocks if block is not None])


def _manifest(winner: pd.Series, metric: str, tracker: RunStore, choices: dict[str, str]) -> dict:
    quality = [*RECORDED, *(f"{m}_std" for m in RECORDED)]
    judge = judges.run_judges(winner.to_frame().T)[0]
    tags, metrics = row_tags(winner), row_metrics(winner)
    return {
        "experiment": tracker.experiment,
        "run_id": winner.run_id,
        "label": winner.label,
        "choices": choices,
        "metric": metric,
        "config_fingerprint": tags.get(FINGERPRINT_TAG),
        "dataset": tags.get(DATASET_TAG),
        "dataset_fingerprint": tags.get(DATASET_FINGERPRINT_TAG),
        "git_sha": tags.get(GIT_SHA_TAG),
        "packages": {key.removeprefix(VERSION_TAG): tags[key] for key in sorted(tags) if key.startswith(VERSION_TAG)},
        "metrics": {name: metrics[name] for name in quality if name in metrics},  # retrieval only: no answer metrics
        **({"judge": judge.to_dict()} if judge else {}),  # what scored its judged metrics; `gate` checks it
    }
