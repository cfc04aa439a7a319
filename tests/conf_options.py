"""The options of a config group as conf/<group>/*.yaml lists them, composed and built as a sweep builds
them. The contract tests take their cases from here, so a new YAML is tested without editing a test."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig

CONF = Path(__file__).resolve().parents[1] / "conf"

# Groups whose every option a contract test runs; tests/test_configs.py fails if one lists nothing,
# since an empty parametrisation is a skip, and a renamed folder would pass that way.
CONTRACT_GROUPS = ("augment", "chunker", "compress", "cutoff", "judge", "query", "relevance_judge", "retriever", "store",
                   "tracking")


def options(group: str) -> list[str]:
    """The option names of `group`, sorted (empty when conf/<group>/ is missing)."""
    return sorted(path.stem for path in (CONF / group).glob("*.yaml"))


def compose_option(group: str, option: str, *overrides: str) -> DictConfig:
    """The project's config with `<group>=<option>`, as one job of a sweep composes it."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=[f"{group}={option}", *overrides])


def instantiate_group(cfg: DictConfig, group: str, **stages: Any) -> Any:
    """`cfg[group]` built by Hydra, handed those `stages` its constructor names, as the runner hands a
    retriever its embedder and store."""
    parameters = inspect.signature(get_class(cfg[group]._target_)).parameters
    return instantiate(cfg[group], **{name: stage for name, stage in stages.items() if name in parameters})
