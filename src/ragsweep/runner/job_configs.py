"""Each job's config of a sweep, with Hydra composing once per distinct choice of config groups.

Hydra's launchers compose every job's config from the YAML files up (`ConfigLoader.load_sweep_config`),
60-90 ms a job, though most jobs of a grid differ from another only in values (`k=3`, `chunker.size=200`), not
in which option of a group they take. `GroupChoiceLoader` composes each distinct set of group choices once
through Hydra, then applies a job's value overrides to a copy with Hydra's own override function, and sets
the per-job fields of the `hydra` node as Hydra does. A job whose overrides touch `hydra.*`, or whose
overrides the copy refuses, is composed by Hydra from scratch, so its config and its errors are Hydra's.
"""

from __future__ import annotations

import pickle
from typing import Any

from hydra.core.config_loader import ConfigLoader
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ragsweep.hydra_internals import (Override, apply_value_overrides, group_repository, launcher_config_loader,
                                      overrides_dirname, parse_overrides)

MAX_COMPOSED = 64  # distinct group choices kept; a grid visits its jobs choice by choice


class GroupChoiceLoader:
    """A `ConfigLoader` whose `load_sweep_config` composes once per distinct choice of config groups; every
    other call goes to the loader it wraps."""

    def __init__(self, loader: ConfigLoader) -> None:
        self._loader = loader
        self._repository: Any = None
        self._composed: dict[tuple[str, ...], DictConfig] = {}
        self._parsed: dict[str, tuple[Override, bool]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        """The job's config, equal to Hydra's `load_sweep_config(master_config, sweep_overrides)`."""
        lines = list(sweep_overrides)
        repository = self._group_repository(master_config)
        if repository is None:
            return self._loader.load_sweep_config(master_config, lines)
        parsed = [self._parsed_line(line, repository) for line in lines]
        if any(override.is_hydra_override() for override, _ in parsed):
            return self._loader.load_sweep_config(master_config, lines)
        overrides = [override for override, _ in parsed]
        groups = tuple(override.input_line for override, choice in parsed if choice)
        values = [override for override, choice in parsed if not choice]
        composed = self._composed.get(groups)
        if composed is None:
            composed = self._loader.load_sweep_config(master_config, list(groups))
            if len(self._composed) >= MAX_COMPOSED:
                self._composed.pop(next(iter(self._composed)))
            self._composed[groups] = composed
        config = _copy(composed)
        try:
            apply_value_overrides(values, config)
        except (HydraException, OmegaConfBaseException):
            return self._loader.load_sweep_config(master_config, lines)  # Hydra's own error
        names = config.hydra.job.config.override_dirname
        config.hydra.overrides.task = lines
        config.hydra.job.override_dirname = overrides_dirname(overrides, names.exclude_keys, names.item_sep,
                                                              names.kv_sep)
        OmegaConf.copy_cache(from_config=master_config, to_config=config)
        return config

    def _parsed_line(self, line: str, repository: Any) -> tuple[Override, bool]:
        """An override as Hydra parses it, and whether it chooses a group's option; each line parsed once (a
        grid's jobs repeat most of theirs)."""
        if line not in self._parsed:
            override = parse_overrides([line], self._loader)[0]
            self._parsed[line] = (override, _is_group_choice(override, repository))
        return self._parsed[line]

    def _group_repository(self, master_config: DictConfig) -> Any:
        """Hydra's config repository of this sweep, which tells a group (`chunker`) from a value (`k`); None
        for a loader that is not Hydra's own, which then composes every job itself."""
        if self._repository is None:
            self._repository = group_repository(self._loader, master_config.hydra.job.config_name,
                                                master_config.hydra.overrides.hydra)
        return self._repository


def _copy(config: DictConfig) -> DictConfig:
    """A deep copy, flags and all: OmegaConf's own pickling takes under half the time of its `__deepcopy__`."""
    return pickle.loads(pickle.dumps(config, protocol=pickle.HIGHEST_PROTOCOL))


def _is_group_choice(override: Override, repository: Any) -> bool:
    """Whether Hydra reads `override` as a choice in the defaults list rather than a value, as its
    `defaults_list.Overrides` decides."""
    return repository.group_exists(override.key_or_group) and not isinstance(override.value(), dict)


def launcher_loader(launcher: Any, loader: ConfigLoader) -> GroupChoiceLoader:
    """The config loader of `launcher` when it is ragsweep's, so it reuses what a sweeper composed for it; else
    `loader` wrapped."""
    own = launcher_config_loader(launcher)
    return own if isinstance(own, GroupChoiceLoader) else GroupChoiceLoader(loader)
