"""A tracker built from its `conf/tracking/` option outside a sweep: the store the commands read and write."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import OmegaConf

from ragsweep.tracking.base import RunStore


def open_tracker(option: str, conf_dirs: Sequence[Path], **settings: Any) -> RunStore:
    """The tracker of `conf/tracking/<option>.yaml` (the first of `conf_dirs` that has it) with `settings` in place
    of its keys (`uri`, `experiment`, `artifacts`); ValueError naming the options when none has it."""
    found = [Path(folder) / "tracking" / f"{option}.yaml" for folder in conf_dirs]
    path = next((candidate for candidate in found if candidate.is_file()), None)
    if path is None:
        options = sorted({yaml.stem for folder in conf_dirs for yaml in (Path(folder) / "tracking").glob("*.yaml")})
        raise ValueError(f"--tracking {option}: there is no conf/tracking/{option}.yaml; choose one of "
                         f"{', '.join(options) or 'none found'}")
    config = OmegaConf.load(path)
    for key, value in settings.items():
        config[key] = value
    return instantiate(config)
