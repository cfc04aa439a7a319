"""How a Python call's choices become a job's config, composed as `sweep.py` composes it.

Keyword arguments become Hydra overrides (`k=5` -> `k=5`, a string quoted where Hydra's grammar needs it).
A Python object given instead of an option name is scored through its group's wrapper
(`ragsweep.chunking.own.OwnChunker`, ...), identified by the name and version its owner gives it, and the
job is named as if the object were an option of its group (`chunker=my-splitter`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from ragsweep.hydra_internals import overrides_dirname, parse_overrides
from ragsweep.runner.build import ConfigError
from ragsweep.runner.compose import compose_config
from ragsweep.runner.entry import conf_dirs
from ragsweep.runner.overrides import unknown_choices
from ragsweep.types import Dataset

# The wrapper that scores a user's object in each group that takes one.
WRAPPERS = {"dataset": "ragsweep.data.own.GivenDataset", "chunker": "ragsweep.chunking.own.OwnChunker",
            "embedder": "ragsweep.embedding.own.OwnEmbedder", "retriever": "ragsweep.retrieval.own.OwnRetriever",
            "generator": "ragsweep.generation.own.OwnGenerator"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")  # a name that is also a valid override value and MLflow param


@dataclass(frozen=True)
class Component:
    """A component of your own with the name and version that identify its results.

    ragsweep cannot read a Python object's settings, so it keys the object's cached results and
    records its run under these: give a new `version` whenever its output changes, or the cache
    hands back the old results. An object with `name` and `version` attributes needs no wrapper.
    """

    component: Any
    name: str
    version: str


def compose_job(conf: Path, project: Path, config_dir: Path | None, choices: Mapping[str, Any],
                lines: Sequence[str]) -> tuple[DictConfig, dict[str, Any]]:
    """The job config of `choices` + the override `lines` (with its `hydra` node) and the caller's objects by
    group; `conf` is the project's config folder, `config_dir` a folder of the caller's own YAML."""
    lines, objects, named = list(lines), {}, []
    for key, value in choices.items():
        if key in WRAPPERS and not isinstance(value, str):
            objects[key], node = own_component(key, value)
            named.append((key, node))
        else:
            lines.append(f"{key}={override_value(value)}")
    problems = unknown_choices(lines, [*conf_dirs(project), *([config_dir] if config_dir else [])])
    if problems:
        raise ConfigError("; ".join(problems))
    parsed = parse_overrides(lines)  # settings of an object's wrapper (generator.max_error_rate) go
    mine = [o for o in parsed if o.key_or_group.split(".")[0] in objects]  # to its node, not to Hydra
    searchpath = [f"hydra.searchpath=[file://{config_dir}]"] if config_dir else []
    hydra_lines = [*searchpath, *(o.input_line for o in parsed if o not in mine)]
    cfg = compose_config(conf, hydra_lines, hydra=True)
    with read_write(cfg), open_dict(cfg):
        for key, node in named:
            cfg[key] = node
            cfg.hydra.runtime.choices[key] = node["name"]
        for override in mine:
            OmegaConf.update(cfg, override.key_or_group, override.value(), force_add=True)
        if named:  # the run's name, as if each object were an option of its group: chunker=my-splitter
            named_lines = parse_overrides([f"{key}={node['name']}" for key, node in named])
            settings = cfg.hydra.job.config.override_dirname
            cfg.hydra.job.override_dirname = overrides_dirname(
                [*parsed, *named_lines], settings.exclude_keys, settings.item_sep, settings.kv_sep)
    return cfg, objects


def own_component(group: str, value: Any) -> tuple[Any, dict[str, Any]]:
    """The object to score and its group's config: the wrapper, the name and version that identify it."""
    if group == "dataset":
        if not isinstance(value, Dataset):
            raise ConfigError(f"dataset: give an option of conf/dataset/ (e.g. 'chroma_general') or a "
                              f"ragsweep.types.Dataset, not a {type(value).__name__}")
        if not _NAME.match(value.name):
            raise ConfigError(f"dataset: name {value.name!r} must be letters, digits, '-', '_' or '.'")
        return value, {"_target_": WRAPPERS[group], "name": value.name}
    if isinstance(value, Component):
        component, name, version = value.component, value.name, value.version
    else:
        component, name, version = value, getattr(value, "name", None), getattr(value, "version", None)
    if not isinstance(name, str) or not _NAME.match(name) or version is None or not str(version).strip():
        raise ConfigError(
            f"{group}: a {type(component).__name__} object needs a name and a version: ragsweep cannot read an "
            f"object's settings, so it caches and records its results under them (a new version when its output "
            f"changes, or the cache returns the old results). Pass ragsweep.Component(obj, name='my-{group}', "
            f"version='1'), or give the object `name` and `version` attributes; a name is letters, digits, '-', "
            f"'_' or '.' (got name={name!r}, version={version!r})")
    return component, {"_target_": WRAPPERS[group], "name": name, "version": str(version)}


def override_value(value: Any) -> str:
    """A Python value as a Hydra override value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(override_value(item) for item in value) + "]"
    return quoted(str(value)) if isinstance(value, str) else str(value)


def quoted(text: str) -> str:
    """A string override value, quoted when Hydra's grammar would read it otherwise."""
    return text if re.fullmatch(r"[\w./\-:+]+", text) else "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def value_label(value: Any) -> str:
    """How a grid value reads in a sweep's description: an object by its name."""
    if value is None or isinstance(value, (str, int, float, bool, list, tuple)):
        return override_value(value)
    return str(value.name if isinstance(value, Component) else getattr(value, "name", type(value).__name__))


def point_label(point: Mapping[str, Any]) -> str:
    """A sweep point as `key=value,...`, for the message that lists the points that cannot run."""
    return ",".join(f"{key}={value_label(value)}" for key, value in point.items())
