"""Check a whole command line before Hydra starts anything: every point of a sweep composed and built.

Hydra composes a sweep's points one job at a time, so a bad point (`k=6,0,7`) used to fail after the
points before it had run, and left a FAILED parent run behind. Here every point is composed with
Hydra's compose API and built as its job would build it (without loading models), its dataset is
loaded and its output folders are checked, before any folder, parent run or job exists. A sweep
with bad points lists them all, one line each, and exits 2.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf

from ragsweep.data.base import DatasetError
from ragsweep.data.loading import loaded
from ragsweep.data.lost_evidence import lost_in_every_text
from ragsweep.hydra_internals import (ChoiceSweep, IntervalSweep, Override, RangeSweep, active_config_loader,
                                      args_parser, parse_overrides, sweep_points)
from ragsweep.metrics import registry
from ragsweep.runner.build import build
from ragsweep.runner.compose import composing
from ragsweep.runner.errors import ConfigError, first_line
from ragsweep.runner.plan import plan_job
from ragsweep.runner.racing.sweep import RACING_SWEEPER, racing_problems
from ragsweep.packaged import PACKAGED_CONF
from ragsweep.runner.overrides import home_expanded, repeated_groups, unknown_choices, unquoted_values
from ragsweep.types import Dataset

log = logging.getLogger(__name__)

MAX_POINTS = 256  # a larger search space is checked one axis at a time (each value once)


def check_command_line(argv: Sequence[str], conf_dir: Path,
                       visit: Callable[[list[str], DictConfig], None] | None = None) -> list[str]:
    """One message per problem of `sweep.py argv`; empty when every point can run. `visit` is given each point
    that can run (its overrides and its config), as `ragsweep estimate` needs them."""
    args = args_parser().parse_args(home_expanded(argv))  # a bad flag: argparse's usage and exit 2, as Hydra would
    if args.help or args.hydra_help or args.cfg or args.info or args.shell_completion or args.experimental_rerun:
        return []  # Hydra answers these itself without running a job
    conf = (conf_dir.parent / args.config_path).resolve() if args.config_path else conf_dir
    own = Path(args.config_dir).resolve() if args.config_dir else None  # a user's YAML, searched after conf/
    if own is not None and not own.is_dir():
        return [f"--config-dir {args.config_dir}: no such folder; give the folder that holds your "
                "<group>/<option>.yaml files"]
    folders = [conf_dir, PACKAGED_CONF, *([own] if own else [])]
    problems = unknown_choices(args.overrides, folders) + repeated_groups(args.overrides, folders)
    if problems:
        return problems
    extra = [f"hydra.searchpath=[file://{own}]"] if own else []
    try:
        overrides = parse_overrides(args.overrides)
    except HydraException as error:
        return unquoted_values(args.overrides) or [f"cannot read the overrides: {first_line(error)}"]
    sweeps = [override for override in overrides if override.is_sweep_override()]
    if sweeps and not args.multirun:
        key = sweeps[0].get_key_element()
        return [f"{sweeps[0].input_line} gives several values: add -m to run one job per value, "
                f"or write {key}=[...] for a list"]
    name = args.config_name or "config"
    with composing(conf) as compose_checked:
        try:
            fixed = [o.input_line for o in overrides if not o.is_sweep_override()]
            primary = compose_checked(name, [*extra, *fixed], hydra=True)
            problems = _launcher_problems(primary)
            tasks = [o for o in overrides if not o.is_hydra_override()]  # Hydra's own: in `primary`, as a sweep's
            points = _points(primary, tasks) if args.multirun else [[o.input_line for o in overrides]]
            if args.multirun and str(primary.hydra.sweeper.get("_target_", "")).endswith(RACING_SWEEPER):
                problems += racing_problems(primary, points)
            if args.multirun and str(primary.hydra.sweeper.get("_target_", "")).endswith("OptunaSweeper"):
                problems += study_problems(primary)
        except ConfigError as error:
            return [str(error)]
        if problems:
            return problems
        compose_point = _as_launched(primary) if args.multirun else None
        return _point_problems(lambda point: compose_checked(name, [*extra, *point], compose_with=compose_point),
                               points, multirun=bool(args.multirun), visit=visit)


def exit_on_bad_command_line(argv: Sequence[str], conf_dir: Path,
                             visit: Callable[[list[str], DictConfig], None] | None = None) -> None:
    problems = check_command_line(argv, conf_dir, visit)
    if not problems:
        return
    for problem in problems:
        print(f"ragsweep: error: {problem}", file=sys.stderr)
    raise SystemExit(2)


def check_config(cfg: DictConfig, objects: Mapping[str, Any] | None = None) -> Dataset:
    """What a job needs before it starts: its stages build and load their models (once per process, so
    jobs in this process reuse them), its dataset loads, its folders are writable; the dataset it loaded.
    `objects`: a Python caller's own components (see `build`)."""
    pipeline = build(plan_job(cfg), objects=objects)
    dataset = loaded(pipeline.dataset)
    if pipeline.cache.enabled:
        writable(Path(str(cfg.cache.dir)), "cache.dir", folder=True)
    outputs = OmegaConf.select(cfg, "paths.outputs")  # each job's folder, metrics.json and per_query.jsonl
    if outputs is not None:
        writable(Path(str(outputs)), "paths.outputs", folder=True)
    tracker = pipeline.tracker
    problem = tracker.problem()
    if problem:
        raise ConfigError(f"tracking.uri: {problem}")
    database = tracker.local_database()
    if database is not None:
        writable(database, "tracking.uri")
        default = OmegaConf.select(cfg, "paths.mlruns")
        if not database.parent.is_dir() and (default is None or database.parent.resolve() != Path(default).resolve()):
            raise ConfigError(f"tracking.uri={tracker.uri}: the folder {database.parent} does not exist; create it "
                              "or point tracking.uri at a store in an existing folder (only the default mlruns/ is "
                              "created for you)")
    if not tracker.uri.startswith(("http://", "https://")):  # a tracking server keeps its own artifacts
        writable(Path(str(tracker.artifacts)), "tracking.artifacts", folder=True)
    return dataset


def writable(path: Path, key: str, folder: bool = False) -> None:
    """`path` (a `folder`, or a file) can be created or written: its nearest existing ancestor is a writable
    folder (os.access also answers for root on a read-only filesystem)."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing == path and path.is_file() and not folder:
        if not os.access(path, os.W_OK):
            raise ConfigError(f"{key}: {path} is read-only; make it writable or point {key} elsewhere")
        return
    if not existing.is_dir():
        raise ConfigError(f"{key}: {existing} is a file, not a folder; point {key} at a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{key}: {existing} is read-only; make it writable or point {key} at a folder you can write")


def _as_launched(primary: DictConfig) -> Callable[[list[str]], DictConfig]:
    """Each point's config as the sweep's launcher composes it (`runner.job_configs`, Hydra once per choice of
    config groups), from `primary`, the config of the command line's fixed overrides, which holds its
    `hydra` ones (a point, as a sweeper's job, has none)."""
    from ragsweep.runner.job_configs import GroupChoiceLoader

    choices = GroupChoiceLoader(active_config_loader())
    return lambda overrides: choices.load_sweep_config(primary, overrides)


def _point_problems(compose_point: Callable[[list[str]], DictConfig], points: list[list[str]],
                    multirun: bool, visit: Callable[[list[str], DictConfig], None] | None = None) -> list[str]:
    """Every point composed and checked (and then visited); a problem shared by several points is listed once."""
    failed: dict[str, list[list[str]]] = {}
    datasets: dict[str, Dataset] = {}  # by fingerprint: the points of a sweep share a few datasets
    for point in points:
        try:
            cfg = compose_point(point)
            dataset = check_config(cfg)
            datasets[dataset.fingerprint] = dataset
            if visit is not None:
                visit(point, cfg)
        except (ConfigError, DatasetError) as error:
            failed.setdefault(str(error), []).append(point)
    for name, questions in lost_in_every_text(list(datasets.values())).items():
        log.warning("%s: the evidence of %d question(s) (%s%s) is in none of the sweep's parsed texts; a problem of "
                    "the dataset (a quote of another edition, a scanned page?): fix the quotes, or know that no "
                    "configuration can retrieve it", name, len(questions), ", ".join(questions[:5]),
                    ", ..." if len(questions) > 5 else "")
    if not multirun or not failed:
        return list(failed)
    swept = _swept_keys(points)
    bad = sum(len(failing) for failing in failed.values())
    header = f"{bad} of {len(points)} points of the sweep cannot run; nothing was started:"
    return [header, *(f"  {_label(failing, swept, len(points))}: {message}" for message, failing in failed.items())]


def _label(failing: list[list[str]], swept: set[str], total: int) -> str:
    """The swept values the failing points share (`k=0 (9 points)`), else the points themselves."""
    if len(failing) == total and total > 1:
        return f"all {total} points"
    named = [[o for o in point if o.split("=", 1)[0].lstrip("+~") in swept] for point in failing]
    common = [o for o in named[0] if all(o in point for point in named[1:])]
    if common:
        return ",".join(common) + (f" ({len(failing)} points)" if len(failing) > 1 else "")
    labels = [",".join(point) for point in named]
    return "; ".join(labels[:5]) + (f" and {len(labels) - 5} more" if len(labels) > 5 else "")


def _swept_keys(points: list[list[str]]) -> set[str]:
    """Keys whose value differs between points: the part of each point worth naming."""
    values: dict[str, set[str]] = {}
    for point in points:
        for override in point:
            key, _, value = override.partition("=")
            values.setdefault(key.lstrip("+~"), set()).add(value)
    return {key for key, seen in values.items() if len(seen) > 1 or len(points) == 1}


def study_problems(primary: DictConfig) -> list[str]:
    """An Optuna study's directions must be the registry's for the metrics `optimized_metric` names, in its
    order, one each: a study told to maximize latency searches for the slowest configurations, and one with
    fewer directions than values fails every trial."""
    metrics = registry.objectives(primary.get("optimized_metric"))
    if not metrics or any(name not in registry.METRICS for name in metrics):  # the job's own check names it
        return []
    direction = primary.hydra.sweeper.get("direction")
    given = [getattr(d, "name", str(d)) for d in (direction if isinstance(direction, Sequence) and
                                                   not isinstance(direction, str) else [direction])]
    expected = [registry.metric(name).direction for name in metrics]
    if given == expected:
        return []

    def shown(values: list[str]) -> str:
        return values[0] if len(values) == 1 else f"[{','.join(values)}]"

    return [f"hydra.sweeper.direction={shown(given)} does not match optimized_metric={shown(list(metrics))}: the "
            f"metric registry gives {shown(expected)}; set hydra.sweeper.direction={shown(expected)}"]


def _launcher_problems(primary: DictConfig) -> list[str]:
    launcher = primary.hydra.launcher
    if str(launcher.get("_target_", "")).endswith("JoblibLauncher"):
        n_jobs = launcher.get("n_jobs")
        if not isinstance(n_jobs, int) or isinstance(n_jobs, bool) or n_jobs == 0:
            return [f"hydra.launcher.n_jobs={n_jobs} is not a worker count; use 1, 2, ... "
                    "(or -1 for one worker per core, -2 for all but one)"]
    return []


def _points(primary: DictConfig, overrides: list[Override]) -> list[list[str]]:
    """The override list of each job the sweeper can launch: Hydra's own expansion for the basic
    sweeper; for a search (Optuna), every choice and both bounds of each range or interval."""
    params = primary.hydra.sweeper.get("params")
    params = OmegaConf.to_container(params, resolve=False) if params else {}
    lines = [*(f"{key}={value}" for key, value in params.items()), *(o.input_line for o in overrides)]
    try:
        parsed = parse_overrides(lines)
    except HydraException as error:
        raise ConfigError(f"hydra.sweeper.params: {first_line(error)}") from None
    if str(primary.hydra.sweeper.get("_target_", "")).endswith(("BasicSweeper", RACING_SWEEPER)):
        return sweep_points(parsed)
    axes: dict[str, list[str]] = {}
    for override in parsed:  # later lines override earlier ones, as in the sweeper
        axes[override.input_line.split("=", 1)[0]] = _search_values(override)
    keys = list(axes)
    if math.prod(len(values) for values in axes.values()) <= MAX_POINTS:
        combos = itertools.product(*axes.values())
    else:
        first = [values[0] for values in axes.values()]
        combos = [[*first[:i], value, *first[i + 1:]] for i, values in enumerate(axes.values()) for value in values]
    return [[f"{key}={value}" for key, value in zip(keys, combo)] for combo in combos]


def _search_values(override: Override) -> list[str]:
    value = override.value()
    if isinstance(value, IntervalSweep):
        return [_plain_number(value.start), _plain_number(value.end)]
    if isinstance(value, RangeSweep):
        values = list(override.sweep_string_iterator())
        return values if len(values) <= 10 else [values[0], values[-1]]
    if isinstance(value, ChoiceSweep) or override.is_sweep_override():
        return list(override.sweep_string_iterator())
    return [override.get_value_element_as_str()]


def _plain_number(value: float) -> str:
    """A bound as a command line writes it: `3`, not `3.0`."""
    return str(int(value)) if float(value).is_integer() else str(value)
