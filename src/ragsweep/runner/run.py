"""One sweep job as its sweeper launches it: planned, built, skipped when a run of its configuration has finished,
run (`runner.job`) or, in a race, one round of it; and what it hands back to the sweeper."""

from __future__ import annotations

import gc
import json
import logging
import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from ragsweep.cores import CoreShare
from ragsweep.data.base import DatasetError
from ragsweep.data.loading import load_once
from ragsweep.disk import write_refused
from ragsweep.identity import config_label, versions_text
from ragsweep.metrics import registry
from ragsweep.runner.build import ConfigError, Pipeline, build
from ragsweep.runner.failures import JOB_FAILURES, stop_on_refused_write, sweep_job_failed
from ragsweep.runner.job import run_job
from ragsweep.runner.embedding_helpers import help_embed, is_helper
from ragsweep.runner.plan import JobNaming, JobPlan, plan_job
from ragsweep.runner.racing.kept import KEPT
from ragsweep.runner.racing.rounds import RACE_FILE, RACE_KEY, RaceRound, race_dataset, write_race_scores
from ragsweep.tracking.base import RunExtension, Tracker
from ragsweep.tracking.tags import RACE_QUESTIONS_TAG, VERSIONS_TAG
from ragsweep.tracking.runs import download_per_query
from ragsweep.tracking.store import full_store, sqlite_database
from ragsweep.types import Dataset

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunContext:
    """Where a job's results go and the sweep it belongs to: given by its caller (a Hydra job, `Evaluation`)."""

    output_dir: Path
    parent: str | None = None  # the sweep's MLflow parent run; None for a run on its own


def main(cfg: DictConfig, naming: JobNaming | None, context: RunContext) -> float | list[float] | dict | None:
    """Plan and run one job; return the metric a sweeper optimises (a list of them, one per direction of a
    multi-objective Optuna study, for a list `optimized_metric`), or in a race (`race` set by the racing
    sweeper) the round's per-question scores (`race.json`, see `racing.rounds.write_race_scores`).

    Bad config or data ends the process with one line and exit code 2. In a sweep, a job that
    raises is already recorded as FAILED (with its traceback) and the sweep goes on, unless
    `fail_fast=true`, which ends it there.
    """
    if is_helper(cfg):
        return help_embed(cfg, naming, context.output_dir)
    name = config_label(naming.overrides, naming.config_name, None) if naming else "run"
    return _returned(cfg, name, context, lambda: run(plan_job(cfg, naming), context))


def _returned(cfg: DictConfig, name: str, context: RunContext, work: Callable[[], dict[str, float]]
              ) -> float | list[float] | dict | None:
    """What the job `name` returns to its sweeper once its `work` returns or raises (see `main`)."""
    try:
        means = work()
    except (ConfigError, DatasetError) as error:
        print(f"ragsweep: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception as error:
        refused = write_refused(error) or full_store(error)
        if refused is not None:
            stop_on_refused_write(name, refused, _setting_of(refused, cfg, context), context.parent is not None)
        if context.parent is not None:
            sweep_job_failed(name, error, cfg.get("fail_fast", False))
            return None if RACE_KEY in cfg else objective(None, cfg.get("optimized_metric"))
        if isinstance(error, JOB_FAILURES):  # one run: its FAILED record is in MLflow; the user needs a line
            print(f"ragsweep: error: {error}", file=sys.stderr)
            raise SystemExit(1) from None
        raise
    if RACE_KEY in cfg:
        return json.loads((context.output_dir / RACE_FILE).read_text())
    return objective(means, cfg.get("optimized_metric"))


def _setting_of(error: OSError, cfg: DictConfig, context: RunContext) -> str | None:
    """The setting that names the folder a refused write was in (cache.dir, paths.mlruns, tracking.uri,
    paths.outputs), if any."""
    if error.filename is None:
        return None
    path = Path(error.filename).resolve()
    database = sqlite_database(str(cfg.get("tracking", {}).get("uri")))
    folders = {"cache.dir": cfg.get("cache", {}).get("dir"), "paths.mlruns": cfg.get("paths", {}).get("mlruns"),
               "tracking.uri": database.parent if database else None, "paths.outputs": context.output_dir}
    return next((setting for setting, folder in folders.items()
                 if folder is not None and path.is_relative_to(Path(str(folder)).resolve())), None)


def objective(values: Mapping[str, float] | None, optimized_metric: str | Sequence[str] | None
              ) -> float | list[float] | None:
    """What the job returns to its sweeper: the value of `optimized_metric`, or for a list the list of their
    values (hydra-optuna-sweeper takes one per direction); NaN for a failed job (None: no values), which Optuna
    records as a failed trial. A metric the run did not log is NaN too, and said in the log."""
    metrics = registry.objectives(optimized_metric)
    if not metrics:
        return None
    found = [math.nan if values is None else float(values.get(metric, math.nan)) for metric in metrics]
    for metric in metrics:
        if values is not None and metric not in values:
            log.warning("optimized_metric %s: the run logged no such metric; its sweeper gets NaN", metric)
    return found[0] if isinstance(optimized_metric, str) else found


def run(plan: JobPlan, context: RunContext, objects: Mapping[str, Any] | None = None) -> dict[str, float]:
    """Build, validate, run and record one planned configuration; return the mean of every metric.

    Inside a sweep (`context.parent`), a configuration that already has a FINISHED run in the experiment
    is not run again unless `+force=true`; its recorded metrics are returned. `objects` are a Python
    caller's own components by group (see `build`).
    """
    pipeline = build(plan, objects=objects)
    race = RaceRound.from_setting(plan.config[RACE_KEY]) if RACE_KEY in plan.config else None
    return _run_built(pipeline, context, race)


def _run_built(pipeline: Pipeline, context: RunContext, race: RaceRound | None) -> dict[str, float]:
    """`run` once the configuration is built; in a race, one round of it, after which the process that sweeps the
    race keeps it for the next (`racing.kept`)."""
    plan = pipeline.plan
    dataset = load_once(pipeline.dataset)
    config_id = plan.fingerprint(dataset.fingerprint)
    parent = context.parent
    with CoreShare().working(), _job_lock(pipeline, config_id, plan.label) if parent else nullcontext():
        if parent and race is None and not plan.config.get("force", False):
            finished = pipeline.tracker.finished_run(config_id)
            if finished is not None:
                log.info("skipped %s: run %s already finished this configuration (+force=true reruns it)",
                         plan.label, finished.run_id)
                pipeline.tracker.note_reused(parent, config_id, finished.run_id)
                return dict(finished.metrics)
            _say_if_older_code_ran_it(pipeline, plan.unversioned_fingerprint(dataset.fingerprint), config_id)
        try:
            if race is None:
                return run_job(pipeline, dataset, config_id, context)
            means = _run_race_round(pipeline, dataset, config_id, context, race)  # it finds its earlier rounds
            if race.slot is not None:
                KEPT.keep(race.slot, partial(_next_round, pipeline, context), context.output_dir)
            return means
        finally:
            _freeze_loaded_heap(computed=sum(pipeline.cache.misses.values()) > 0)


def _next_round(pipeline: Pipeline, context: RunContext, race: RaceRound) -> dict | None:
    """A kept configuration's next round of its race, with the pipeline its first round built; what its job would
    return."""
    pipeline.cache.reset_counts()  # each round logs its own hits and misses
    return _returned(pipeline.plan.config, pipeline.plan.label, context, lambda: _run_built(pipeline, context, race))


def _say_if_older_code_ran_it(pipeline: Pipeline, unversioned: str, config_id: str) -> None:
    """Warn when this configuration has a FINISHED run made by code of other versions, or under identity rules
    since changed (a retrieval-only job's answer-only settings once in its fingerprint): it runs again, and the
    user learns why a configuration they had run is not skipped."""
    older = pipeline.tracker.finished_by_other_code(unversioned, config_id)
    if older is None:
        return
    then = older.tags.get(VERSIONS_TAG) or "none declared"
    now = versions_text(pipeline.plan.versions) or "none declared"
    if then != now:
        log.warning("%s: run %s finished this configuration with code of other versions (then: %s; now: %s), "
                    "so its numbers may differ; running it again", pipeline.plan.label, older.run_id, then, now)
    else:
        log.warning("%s: run %s finished this configuration under an older fingerprint (ragsweep's identity rules "
                    "changed, its code's versions did not: %s), so its numbers should not differ; running it "
                    "again", pipeline.plan.label, older.run_id, now)


def _run_race_round(pipeline: Pipeline, dataset: Dataset, config_id: str, context: RunContext,
                    race: RaceRound) -> dict[str, float]:
    """One round of a race for one configuration: its first n questions in the race's order, logged into the
    configuration's one run of this race, which each round extends at step n and leaves open for the next
    (`RunExtension`; the race closes the runs it stopped).

    A round this configuration already logged whole (a race run again after it ended or was killed) is not
    recomputed: its run's per-question scores are read back. The run gets the configuration's fingerprint tag, which a
    plain sweep reuses, only once it has run every question.
    """
    total = len(dataset.queries)
    asked = race.questions(total)
    tracker = pipeline.tracker
    earlier = tracker.race_run(config_id, race.seed) if race.run is None else None
    done = int(earlier.tags.get(RACE_QUESTIONS_TAG, 0)) if earlier is not None else 0
    if earlier is not None and earlier.status in ("FINISHED", "KILLED") and done >= asked \
            and _read_back_round(tracker, earlier.run_id, race, dataset, context.output_dir):
        log.info("skipped %s: run %s already ran its first %d questions of this race", pipeline.plan.label,
                 earlier.run_id, done)
        tracker.adopt(earlier.run_id, context.parent)
        return dict(earlier.metrics)
    extend = RunExtension(race.run or (earlier.run_id if earlier is not None else None), asked,
                          held_open=race.run is not None, close=asked == total,
                          done={RACE_QUESTIONS_TAG: str(asked)})
    means = run_job(pipeline, race_dataset(dataset, race), config_id, context, race=(race, dataset, extend))
    write_race_scores(context.output_dir, tracker.last_run_id, race, dataset, held_open=not extend.close)
    return means


def _read_back_round(tracker: Tracker, run_id: str, race: RaceRound, dataset: Dataset, output_dir: Path) -> bool:
    """Whether the run's logged per_query.jsonl holds every question of this round, which then goes to race.json:
    a round an ended or killed race logged whole is read back, not recomputed."""
    output_dir.mkdir(parents=True, exist_ok=True)
    try:
        download_per_query(tracker, run_id, str(output_dir))
        write_race_scores(output_dir, run_id, race, dataset, held_open=False)
    except (ValueError, KeyError):  # no per_query.jsonl, or one without this round's questions
        return False
    return True


def _freeze_loaded_heap(computed: bool) -> None:
    """After a process's first job, and after any job that `computed` (missed the stage cache, so it kept new
    chunks, first-stage results or models), move what the process holds out of the cyclic garbage collector's
    reach. A warm job allocates tens of thousands of hits, and every full collection they trigger would rescan
    some 400,000 long-lived objects: 0.2-0.6 s a job on chroma_general, more than the job's own work (profiled;
    benchmarks/grid.py measures the warm grid). Warm jobs compute nothing, so they pay no collection here."""
    if computed or not _HEAP_FROZEN:
        gc.collect()
        gc.freeze()
        _HEAP_FROZEN.append(True)


_HEAP_FROZEN: list[bool] = []


@contextmanager
def _job_lock(pipeline: Pipeline, config_id: str, label: str) -> Iterator[None]:
    """Held while this process runs the configuration, so a second copy of the sweep started at the same time
    waits for it and then finds its FINISHED run instead of running it again (the kernel drops the lock of a
    killed process)."""
    with pipeline.cache.lock(f"job-{config_id}", blocking=False) as held:
        if held:
            yield
            return
    log.info("%s is being run by another process; waiting for it", label)
    with pipeline.cache.lock(f"job-{config_id}"):
        yield
