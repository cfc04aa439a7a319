"""A tracker built from its `conf/tracking/` option outside a sweep: the store the commands read and write."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import OmegaConf

from ragsweep.tracking.base import RunStore


def open_tracker(option: str, conf_dirs: Sequence[Path], mlruns: Path | None = None, **settings: Any) -> RunStore:
    """The tracker of `conf/tracking/<option>.yaml` (the first of `conf_dirs` that has it) with `settings` in place
    of its keys (`uri`, `experiment`, `artifacts`; None keeps the option's own) and `mlruns` as the `paths.mlruns` its
    own keys name (a project's store folder, so the option says where its store is); ValueError naming the options
    when none has it."""
    found = [Path(folder) / "tracking" / f"{option}.yaml" for folder in conf_dirs]
    path = next((candidate for candidate in found if candidate.is_file()), None)
    if path is None:
        options = sorted({yaml.stem for folder in conf_dirs for yaml in (Path(folder) / "tracking").glob("*.yaml")})
        raise ValueError(f"--tracking {option}: there is no conf/tracking/{option}.yaml; choose one of "
                         f"{', '.join(options) or 'none found'}")
    config = OmegaConf.load(path)
    for key, value in settings.items():
        if value is not None:
            config[key] = value
    if mlruns is not None:
        config = OmegaConf.create({"paths": {"mlruns": str(mlruns)}, "tracking": config}).tracking
    return instantiate(config)
