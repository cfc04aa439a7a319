"""`ragsweep.Evaluation`: sweep.py's runs from Python, and a user's own components scored the same way.

Each configuration is composed with Hydra's compose API from the project's `conf/` (plus a user's
config folder), as `sweep.py` composes it, and run by the same `runner.run`: the same config
fingerprint, stage cache, MLflow runs and output folders. `ev.run(chunker="fixed", k=3)` is the run
`python sweep.py chunker=fixed k=3` makes. A Python object given instead of an option name is scored
through its group's wrapper (`api.choices`).
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from ragsweep import per_query as per_query_file
from ragsweep.api.choices import compose_job, point_label, quoted, value_label
from ragsweep.cache import StageCache
from ragsweep.data.base import DatasetError
from ragsweep.data.loading import load_once
from ragsweep.results.exported import ResultsError, read_per_query
from ragsweep.results.diff import Diff, diff_runs
from ragsweep.metrics import registry
from ragsweep.metrics.aggregate import paired_test
from ragsweep.runner.build import Built, ConfigError, group_config, instantiate_stage
from ragsweep.runner.entry import conf_dir
from ragsweep.runner.failures import sweep_job_failed
from ragsweep.runner.preflight import check_config, writable
from ragsweep.runner.plan import JobNaming, JobPlan, plan_job
from ragsweep.runner.run import RunContext, run as run_job
from ragsweep.runner.whole_documents import say_whole_documents
from ragsweep.tracking.sweep import Sweep
from ragsweep.tracking.base import RunStore
from ragsweep.tracking.tags import FINGERPRINT_TAG
from ragsweep.tracking.record import RECORD_FILE, RunRecord
from ragsweep.tracking.runs import download_per_query
from ragsweep.types import Dataset

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MetricSummary:
    """One metric of a run: mean over the questions that have it, std, 95% bootstrap CI, question count."""

    mean: float
    std: float
    ci95: tuple[float, float]
    n: int


@dataclass
class Result:
    """One configuration's run: its MLflow run, identity, every metric and each question's scores."""

    run_id: str
    label: str
    fingerprint: str
    metrics: dict[str, MetricSummary]
    per_query: pd.DataFrame  # one row per question: id, question, then one column per metric
    output_dir: Path
    config: DictConfig


class Evaluation:
    """Runs and sweeps configurations of one project on one dataset, logged to its MLflow experiment.

    Args:
        dataset: An option of `conf/dataset/` (`"chroma_general"`), a `ragsweep.types.Dataset`, or None
            for the config's default.
        experiment: MLflow experiment name.
        project: The folder where `mlruns/`, `outputs/` and the cache go, with its own `conf/config.yaml` or on the
            packaged configs (as for `ragsweep sweep`); default: the nearest folder up from here with
            `conf/config.yaml`, else the current folder.
        config_dir: A folder of your own YAML (`chunker/mine.yaml` with `_target_: mypackage.MyChunker`),
            searched as `sweep.py --config-dir` searches it.
        overrides: Hydra overrides applied to every run (`["cache=off"]`).
    """

    def __init__(self, dataset: str | Dataset | None = None, experiment: str = "ragsweep",
                 project: str | Path | None = None, config_dir: str | Path | None = None,
                 overrides: Sequence[str] = ()) -> None:
        self.project = _project(project)
        self.conf = conf_dir(self.project)
        self.config_dir = Path(config_dir).resolve() if config_dir is not None else None
        if self.config_dir is not None and not self.config_dir.is_dir():
            raise ConfigError(f"config_dir={config_dir}: no such folder; give the folder that holds your "
                              "<group>/<option>.yaml files")
        self.experiment = experiment
        self.dataset = dataset
        self.overrides = [f"paths.root={quoted(str(self.project))}", f"experiment={quoted(experiment)}",
                          *overrides]

    def run(self, overrides: Sequence[str] = (), **choices: Any) -> Result:
        """Run one configuration: `choices` are groups or keys (`chunker="fixed"`, `k=5`, `chunker=my_splitter`),
        `overrides` Hydra overrides (`["chunker.size=200"]`). Raises ConfigError or DatasetError before any
        work for a configuration that cannot run; a run that fails is recorded FAILED and its error raised."""
        cfg, objects = self._compose(choices, overrides)
        output_dir = _folder(_fresh_folder(Path(str(cfg.hydra.run.dir))))
        try:
            run_job(_plan(cfg), RunContext(output_dir), objects)
        finally:
            say_whole_documents()
        return _result(output_dir)

    def sweep(self, grid: Mapping[str, Sequence[Any]], overrides: Sequence[str] = (),
              metric: str | Sequence[str] | None = None, fail_fast: bool = False) -> pd.DataFrame:
        """Run every combination of `grid` (`{"chunker": ["recursive", "fixed"], "k": [5, 10]}`) one after the
        other, under one parent run, as `sweep.py -m chunker=recursive,fixed k=5,10` does; configurations that
        already have a FINISHED run are skipped. Every point is checked before any runs. Returns the sweep's
        summary, one row per configuration ranked by `metric` (with `run_id` and `status`); a job that fails
        is recorded FAILED and the sweep goes on, unless `fail_fast`. A list of metrics (`["token_iou",
        "latency_ms_p95"]`) ranks by the first and tags the runs on the Pareto front over them all."""
        keys = list(grid)
        if not keys or any(isinstance(grid[key], (str, bytes)) or not len(grid[key]) for key in keys):
            raise ConfigError("sweep: give each key a list of values, e.g. {'chunker': ['recursive', 'fixed'], "
                              "'k': [5, 10]}")
        points = [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[key] for key in keys))]
        named = metric if metric is None or isinstance(metric, str) else f"[{','.join(metric)}]"
        overrides = [*overrides, *([f"optimized_metric={named}"] if named else [])]  # checked like the CLI's
        composed = [self._compose(point, overrides) for point in points]
        problems: dict[str, list[str]] = {}  # message -> the points that have it, listed once
        for point, (cfg, objects) in zip(points, composed, strict=True):
            try:
                check_config(_task(cfg), objects)
            except (ConfigError, DatasetError) as error:
                problems.setdefault(str(error), []).append(point_label(point))
        if problems:
            raise ConfigError(f"{sum(map(len, problems.values()))} of {len(points)} points of the sweep cannot run; "
                              "nothing was started:\n" + "\n".join(f"  {'; '.join(labels)}: {message}"
                                                                   for message, labels in problems.items()))
        first = composed[0][0]
        sweep_dir = _fresh_folder(Path(str(first.hydra.sweep.dir)))
        described = " ".join(f"{key}={','.join(value_label(v) for v in grid[key])}" for key in keys)
        sweep = Sweep(instantiate(first.tracking), "adhoc", " ".join([described, *overrides]), sweep_dir,
                      first.get("optimized_metric"))
        parent = sweep.open()
        try:
            for number, (cfg, objects) in enumerate(composed):
                plan = _plan(cfg)
                try:
                    run_job(plan, RunContext(_folder(sweep_dir / str(number)), parent), objects)
                except Exception as error:  # recorded FAILED with its traceback by the tracker
                    sweep_job_failed(plan.label, error, fail_fast, command_line=False)
        except KeyboardInterrupt:  # a notebook's interrupt: the parent closes KILLED with what finished
            log.error("%s; run the same sweep again to run the rest", sweep.stop("KILLED"))
            raise
        except BaseException:  # fail_fast or an error outside the jobs
            log.error("%s; run the same sweep again to run the rest", sweep.stop("FAILED"))
            raise
        finally:
            say_whole_documents()
        jobs, _, _, table = sweep.close()
        if table is None:
            return jobs
        return table

    def compare(self, run_a: str, run_b: str, metric: str = registry.DEFAULT_RANKING,
                samples: int = 10_000) -> dict[str, Any]:
        """Is run `run_a` better than run `run_b` on `metric`? The paired bootstrap over the questions both
        answered (as `ragsweep report` tests the best against each runner-up): mean difference a - b, its 95%
        CI, p-value, questions, verdict."""
        tracker = self._tracker()
        with tempfile.TemporaryDirectory(prefix="ragsweep-compare-") as folder:
            scores = []
            for run_id in (run_a, run_b):
                try:
                    path = download_per_query(tracker, run_id, folder + f"/{run_id}")
                except ValueError as error:
                    raise ResultsError(f"run {run_id}: cannot read its per_query.jsonl ({error})") from None
                per_query = read_per_query(path)
                scores.append({question: values[metric] for question, values in per_query.items() if metric in values})
        if not scores[0] or not scores[1]:
            raise ResultsError(f"{metric}: run {run_a if not scores[0] else run_b} has no such metric per question")
        return {"metric": metric, **paired_test(scores[0], scores[1], samples)}

    def diff(self, run_a: str, run_b: str, metric: str | None = None) -> Diff:
        """Two runs question by question (`ragsweep diff`): `.table` (a DataFrame, largest difference first),
        `.text(top)` and `.html()`."""
        return diff_runs(self._tracker(), run_a, run_b, metric)

    def load_dataset(self) -> Dataset:
        """The dataset runs are scored on (e.g. to build a retriever of your own over its documents)."""
        cfg, objects = self._compose({}, [])
        if "dataset" in objects:
            return objects["dataset"]
        job = _task(cfg)
        cache = StageCache.from_settings(group_config(job, "cache"))  # parsed files, with dataset=files
        loader = instantiate_stage(job, "dataset", {"cache": Built(cache, {})}, cache)
        return load_once(loader.component)

    def _tracker(self) -> RunStore:
        cfg, _ = self._compose({}, [])
        return instantiate(cfg.tracking)

    def _compose(self, choices: Mapping[str, Any], overrides: Sequence[str]) -> tuple[DictConfig, dict[str, Any]]:
        """The job config of `choices` + `overrides` (with its `hydra` node) and the caller's objects by group."""
        choices = {**({"dataset": self.dataset} if self.dataset is not None else {}), **choices}
        return compose_job(self.conf, self.project, self.config_dir, choices, [*self.overrides, *overrides])


def _result(output_dir: Path) -> Result:
    """A finished job's result, read from its output folder (metrics.json, per_query.jsonl, its run record)."""
    summary = json.loads((output_dir / "metrics.json").read_text())
    metrics = {name: MetricSummary(values["mean"], values["std"], tuple(values["ci95"]), values["n"])
               for name, values in summary.items() if "mean" in values}
    records = list(per_query_file.records(per_query_file.find(output_dir)))
    per_query = pd.DataFrame([{"id": r["id"], "question": r["question"],
                               **({"answer": r["answer"]} if "answer" in r else {}), **r["metrics"]} for r in records])
    record = RunRecord.read(output_dir / RECORD_FILE)
    return Result(record.run_id, record.name, record.tags[FINGERPRINT_TAG], metrics, per_query, output_dir,
                  OmegaConf.load(output_dir / "config.yaml"))


def _task(cfg: DictConfig) -> DictConfig:
    """The job's own config, without `hydra` (what sweep.py's task function receives)."""
    task = copy.deepcopy(cfg)
    with read_write(task), open_dict(task):
        del task["hydra"]
    return task


def _plan(cfg: DictConfig) -> JobPlan:
    """The job `cfg` (composed with its `hydra` node) describes, named as Hydra names a job of its overrides."""
    return plan_job(_task(cfg), JobNaming.from_hydra(cfg.hydra))


def _folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _project(project: str | Path | None) -> Path:
    """The project folder: `project`, else the nearest folder up from here with `conf/config.yaml`, else here (the
    packaged configs, as `ragsweep sweep` uses them in a folder without its own)."""
    if project is not None:
        folder = Path(project).expanduser().resolve()
        if not folder.is_dir():
            raise ConfigError(f"project={project}: no such folder; give the folder runs are kept in (mlruns/, "
                              "outputs/, and conf/ if it has its own configs)")
        return folder
    here = Path.cwd().resolve()
    return next((folder for folder in (here, *here.parents) if (folder / "conf" / "config.yaml").is_file()), here)


def _fresh_folder(folder: Path) -> Path:
    """`folder`, or `folder-1`, `folder-2`, ... when a run in the same second already took it."""
    candidate, number = folder, 0
    while candidate.exists():
        number += 1
        candidate = folder.with_name(f"{folder.name}-{number}")
    writable(candidate, "hydra.run.dir")
    return candidate
