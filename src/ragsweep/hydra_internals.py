"""Every private or undocumented part of Hydra 1.3 that ragsweep uses, in one place.

Hydra documents none of these: reusing its basic sweeper and launcher, composing a job's config as its
launcher does, naming a job from its overrides, parsing overrides and reading what an `Override` holds (its
key, its line, the type of its sweep), the config loader of the Hydra set up in this process, the loader a
launcher keeps, a job's `env_set` applied in this process, parsing `sweep.py`'s own command line, locating
a `_target_` without Hydra's error logging, an exception Hydra reports as a traceback seen before it does, and the
output folder Hydra was writing when it raised.
A Hydra release may change any of them without notice; `tests/test_hydra_internals.py` checks each as ragsweep
uses it and names the one that changed.

The plugins in `src/hydra_plugins/ragsweep_grid` subclass Hydra's basic launcher and sweeper and import them
from `hydra._internal` themselves: Hydra's plugin scan imports its core plugins' modules anew, so a class
taken from here, imported before the scan, is not the one Hydra instantiates against.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from hydra._internal import utils as hydra_utils
from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.utils import _locate, get_args_parser
from hydra.core.config_loader import ConfigLoader
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, Override, RangeSweep
from hydra.core.utils import env_override as _env_override
from omegaconf import DictConfig

__all__ = ["ChoiceSweep", "IntervalSweep", "Override", "RangeSweep", "active_config_loader", "apply_value_overrides",
           "args_parser", "env_override", "group_repository", "launcher_config_loader", "locate", "overrides_dirname",
           "parse_overrides", "reported_first", "sweep_points", "writing_folder"]


def locate(path: str) -> Any:
    """The object a dotted `_target_` names; ImportError when it cannot be imported (Hydra's public
    `get_class` also logs the error, over three lines)."""
    return _locate(path)


def overrides_dirname(overrides: Sequence[Override], exclude_keys: Sequence[str], item_sep: str = ",",
                      kv_sep: str = "=") -> str:
    """`hydra.job.override_dirname` as Hydra makes it: the overrides sorted, `exclude_keys` left out."""
    return get_overrides_dirname(overrides=list(overrides), exclude_keys=list(exclude_keys), item_sep=item_sep,
                                 kv_sep=kv_sep)


def apply_value_overrides(overrides: Sequence[Override], config: DictConfig) -> None:
    """Set, add or delete the values `overrides` name in `config`, as Hydra's loader does after composing."""
    ConfigLoaderImpl._apply_overrides_to_config(list(overrides), config)


def group_repository(loader: ConfigLoader, config_name: str | None, hydra_overrides: Sequence[str]) -> Any:
    """Hydra's config repository for a sweep (its `group_exists(name)` tells a config group from a value);
    None when `loader` is not Hydra's own."""
    if not isinstance(loader, ConfigLoaderImpl):
        return None
    return loader._parse_overrides_and_create_caching_repo(config_name, list(hydra_overrides))[1]


def sweep_points(overrides: Sequence[Override]) -> list[list[str]]:
    """Every point of the grid that parsed command-line `overrides` make, as Hydra's basic sweeper expands it."""
    return [list(point) for point in BasicSweeper.split_arguments(list(overrides), None)[0]]


def args_parser() -> argparse.ArgumentParser:
    """The argument parser of a Hydra app's command line (`-m`, `--config-name`, `--cfg`, the overrides)."""
    return get_args_parser()


def parse_overrides(lines: Sequence[str], config_loader: ConfigLoader | None = None) -> list[Override]:
    """Override lines as Hydra parses them (a `HydraException` for a bad one); with `config_loader`, as a
    sweeper's parser, whose grammar functions may read the config's groups."""
    return OverridesParser.create(config_loader=config_loader).parse_overrides(list(lines))


def active_config_loader() -> ConfigLoader:
    """The config loader of the Hydra set up in this process (`initialize_config_dir`, `@hydra.main`)."""
    return GlobalHydra.instance().config_loader()


def launcher_config_loader(launcher: Any) -> Any:
    """The config loader a launcher was set up with, which Hydra's launchers (basic, joblib, ...) keep in their
    `hydra_context`; None for a launcher that keeps none."""
    launched = getattr(launcher, "hydra_context", None)
    return launched.config_loader if launched is not None else None


def env_override(env: Mapping[str, str]) -> AbstractContextManager[None]:
    """`hydra.job.env_set` set in this process's environment, and the variables restored on leaving, as
    Hydra's `run_job` does for a job."""
    return _env_override(env)


@contextmanager
def reported_first(handle: Callable[[Exception], None]) -> Iterator[None]:
    """Inside, an exception `hydra.main` would report (`run_and_report`: a trimmed traceback, then exit 1) is given
    to `handle` first, which may end the process its own way (`SystemExit`). Hydra raises there what no job can
    catch: a job's output folder or `.hydra/` files it cannot write, before the job starts."""
    reported = hydra_utils.run_and_report

    def run_and_report(func: Callable[[], Any]) -> Any:
        def handled() -> Any:
            try:
                return func()
            except Exception as error:
                handle(error)
                raise

        return reported(handled)

    hydra_utils.run_and_report = run_and_report
    try:
        yield
    finally:
        hydra_utils.run_and_report = reported


def writing_folder(error: BaseException) -> tuple[str, Path] | None:
    """The setting and the output folder Hydra was making or writing in when it raised `error` in this process: a
    job's (`run_job`: hydra.run.dir, or hydra.sweep.dir's subfolder) or a sweep's (its basic sweeper or launcher:
    hydra.sweep.dir); None when it raised elsewhere. A write that fails names no file, so this names its folder."""
    found = None
    frame = error.__traceback__
    while frame is not None:
        code, local = frame.tb_frame.f_code, frame.tb_frame.f_locals
        if code.co_name == "run_job" and "output_dir" in local and "job_dir_key" in local:
            found = (str(local["job_dir_key"]), Path(str(local["output_dir"])))
        elif code.co_name in ("sweep", "launch") and "sweep_dir" in local:
            found = ("hydra.sweep.dir", Path(str(local["sweep_dir"])))
        frame = frame.tb_next
    return found
