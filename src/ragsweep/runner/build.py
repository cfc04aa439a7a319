"""Instantiate every stage from the config, failing on bad values before any work starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, MissingMandatoryValue, OmegaConf

from ragsweep.chunking.base import Chunker
from ragsweep.data.base import DatasetLoader
from ragsweep.metrics.evaluate import SpanEvaluator
from ragsweep.retrieval.base import Retriever
from ragsweep.tracking.mlflow_tracker import MlflowTracker


class ConfigError(ValueError):
    """A config value that cannot work; the message names the key and the fix."""


@dataclass
class Pipeline:
    dataset: DatasetLoader
    chunker: Chunker
    retriever: Retriever
    evaluator: SpanEvaluator
    tracker: MlflowTracker
    k: int


def build(cfg: DictConfig) -> Pipeline:
    k = cfg.get("k")
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise ConfigError(f"k must be a positive integer, got {k!r}; set e.g. k=5")
    embedder = _instantiate(cfg, "embedder")
    store = _instantiate(cfg, "store")
    return Pipeline(
        dataset=_instantiate(cfg, "dataset"),
        chunker=_instantiate(cfg, "chunker"),
        retriever=_instantiate(cfg, "retriever", embedder=embedder, store=store),
        evaluator=_instantiate(cfg, "metrics"),
        tracker=_instantiate(cfg, "tracking"),
        k=k,
    )


def _instantiate(cfg: DictConfig, group: str, **parts: Any) -> Any:
    """`hydra.utils.instantiate` with its errors reduced to one line naming the key."""
    if group not in cfg:
        raise ConfigError(f"config group {group!r} is missing; add '{group}: <option>' to the defaults list")
    try:
        OmegaConf.to_container(cfg[group], resolve=True, throw_on_missing=True)
        return instantiate(cfg[group], **parts)
    except MissingMandatoryValue as error:
        key = f"{group}.{error.full_key}" if not str(error.full_key).startswith(group) else error.full_key
        raise ConfigError(f"{key} is required; set it on the command line, e.g. {key}=<value>") from None
    except InstantiationException as error:
        cause = error.__cause__ or error
        if isinstance(cause, (ValueError, TypeError)):
            raise ConfigError(f"{group}: {cause}") from None
        raise ConfigError(f"{group}: cannot build {cfg[group].get('_target_')}: {cause}") from None
