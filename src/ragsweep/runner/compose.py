"""The one place ragsweep composes a project's configs with Hydra's compose API (besides `sweep.py`'s
`@hydra.main` and Hydra's launchers): the grid preflight, `ragsweep.Evaluation`, `calibrate`,
`train-judge` and `generate` compose here, and Hydra's errors come out as one-line ConfigErrors."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import yaml
from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from ragsweep.runner.build import build
from ragsweep.runner.errors import ConfigError, first_line, yaml_problem
from ragsweep.runner.plan import plan_job


@contextmanager
def composing(conf: Path) -> Iterator[Callable[..., DictConfig]]:
    """`compose_checked` on the primary configs of the folder `conf`, for many compositions in one setup."""
    with initialize_config_dir(config_dir=str(Path(conf).resolve()), version_base="1.3"):
        yield compose_checked


def compose_config(conf: Path, overrides: Sequence[str] = (), name: str = "config", hydra: bool = False,
                   job: bool = True) -> DictConfig:
    """`<conf>/<name>.yaml` with `overrides`, composed as a sweep's job is (`hydra`: with its `hydra` node;
    `job`: see `compose_checked`)."""
    with composing(conf) as compose_one:
        return compose_one(name, list(overrides), hydra, job)


def compose_checked(name: str, overrides: list[str], hydra: bool = False, job: bool = True,
                    compose_with: Callable[[list[str]], DictConfig] | None = None) -> DictConfig:
    """Hydra's composition of `overrides` (or `compose_with`'s, e.g. a sweep's job configs), its errors as
    one-line ConfigErrors. For a `job` config, a key it does not have (`chunker.sise=100`) is named with the
    keys its component takes."""
    try:
        if compose_with is not None:
            return compose_with(overrides)
        return compose(name, overrides=overrides, return_hydra_config=hydra)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise ConfigError(f"{mark.name if mark else 'a config file'}: {yaml_problem(error)}; fix the file") from None
    except (HydraException, OmegaConfBaseException) as error:
        missing = _not_in_struct(error)
        if missing is not None and f"+{missing}" not in overrides:
            # `chunker.sise=100`: compose it as an addition so build() names the keys the component takes
            appended = [f"+{o}" if o.split("=", 1)[0] == missing else o for o in overrides]
            cfg = compose_checked(name, appended, hydra, job, compose_with)
            if job and not missing.startswith("hydra."):
                build(plan_job(cfg), preflight=False)
        raise ConfigError(first_line(error)) from None


def _not_in_struct(error: Exception) -> str | None:
    """The key of "Could not override 'key'", Hydra's error for a key the config does not have."""
    text = str(error)
    if text.startswith("Could not override '") and "not in" in str(error.__cause__ or ""):
        return text.split("'", 2)[1]
    return None
