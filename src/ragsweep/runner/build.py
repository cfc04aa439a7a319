"""Instantiate every stage from the config, failing on bad values before any work starts."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig, MissingMandatoryValue, OmegaConf

from ragsweep.cache import StageCache, semantic_config
from ragsweep.data.base import DatasetLoader
from ragsweep.metrics.evaluate import METRIC_KEYS, SpanEvaluator
from ragsweep.tracking.mlflow_tracker import MlflowTracker


class ConfigError(ValueError):
    """A config value that cannot work; the message names the key and the fix."""


@dataclass
class Built:
    """A stage and what identifies its output: its config (minus speed-only keys) and its inputs'."""

    component: Any
    signature: dict[str, Any]


@dataclass
class Pipeline:
    dataset: DatasetLoader
    chunker: Built
    retriever: Built
    reranker: Built
    evaluator: SpanEvaluator
    tracker: MlflowTracker
    cache: StageCache
    k: int
    candidates: int  # first-stage hits the reranker reads; 0 without a reranker
    depth: int  # first-stage results computed (and cached) at this depth, then sliced per job


def build(cfg: DictConfig) -> Pipeline:
    k = _positive_int(cfg, "k")
    cache_cfg = _container(cfg, "cache")
    cache = StageCache(cache_cfg["dir"], enabled=bool(cache_cfg["enabled"]))
    embedder = _instantiate(cfg, "embedder", {}, cache)
    embedder.component = cache.embedder(embedder.component, embedder.signature)
    stages = {"embedder": embedder, "store": _instantiate(cfg, "store", {}, cache), "cache": Built(cache, {})}
    reranker = _instantiate(cfg, "reranker", stages, cache)
    candidates = getattr(reranker.component, "candidates", 0)
    if candidates and candidates < k:
        raise ConfigError(f"reranker.candidates ({candidates}) must be >= k ({k}); raise reranker.candidates or lower k")
    pipeline = Pipeline(
        dataset=_instantiate(cfg, "dataset", {}, cache).component,
        chunker=_instantiate(cfg, "chunker", stages, cache),
        retriever=_instantiate(cfg, "retriever", stages, cache),
        reranker=reranker,
        evaluator=_instantiate(cfg, "metrics", {}, cache).component,
        tracker=_instantiate(cfg, "tracking", {}, cache).component,
        cache=cache,
        k=k,
        candidates=candidates,
        depth=max(k, candidates, _positive_int(cfg, "depth")),
    )
    metric = cfg.get("optimized_metric")
    if metric is not None and metric not in METRIC_KEYS:
        raise ConfigError(f"optimized_metric={metric} is not a metric; choose one of {', '.join(METRIC_KEYS)}")
    for stage in (pipeline.chunker, pipeline.retriever, pipeline.reranker, embedder):
        _preflight(stage.component)
    return pipeline


def _instantiate(cfg: DictConfig, group: str, stages: dict[str, Built], cache: StageCache) -> Built:
    """Build `cfg[group]`, handing it the built stages its constructor asks for by name."""
    config = _container(cfg, group)
    try:
        wanted = inspect.signature(get_class(config["_target_"])).parameters
        given = {name: stage for name, stage in stages.items() if name in wanted}
        component = instantiate(cfg[group], **{name: stage.component for name, stage in given.items()})
    except InstantiationException as error:
        cause = error.__cause__ or error
        if isinstance(cause, (ValueError, TypeError)):
            raise ConfigError(f"{group}: {cause}") from None
        raise ConfigError(f"{group}: cannot build {config.get('_target_')}: {cause}") from None
    except (ImportError, ValueError) as error:  # get_class on a bad _target_
        raise ConfigError(f"{group}._target_: {error}") from None
    signature = {"config": semantic_config(config), **{name: stage.signature for name, stage in given.items()}}
    for key, nested in config.items():  # a component's own embedder (e.g. a reranker's) is cached too
        inner = getattr(component, key, None)
        if isinstance(nested, dict) and "_target_" in nested and hasattr(inner, "encode"):
            setattr(component, key, cache.embedder(inner, semantic_config(nested)))
    return Built(component, signature)


def _container(cfg: DictConfig, group: str) -> dict[str, Any]:
    if group not in cfg:
        raise ConfigError(f"config group {group!r} is missing; add '{group}: <option>' to the defaults list")
    try:
        return OmegaConf.to_container(cfg[group], resolve=True, throw_on_missing=True)
    except MissingMandatoryValue as error:
        key = str(error.full_key) if str(error.full_key).startswith(group) else f"{group}.{error.full_key}"
        raise ConfigError(f"{key} is required; set it on the command line, e.g. {key}=<value>") from None


def _positive_int(cfg: DictConfig, key: str) -> int:
    value = cfg.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{key} must be a positive integer, got {value!r}; set e.g. {key}=5")
    return value


def _preflight(component: Any) -> None:
    """Let a component prove it can work (e.g. load a model) before any run starts."""
    check = getattr(component, "preflight", None)
    if check is None:
        return
    try:
        check()
    except (OSError, ValueError, RuntimeError) as error:
        raise ConfigError(str(error).splitlines()[0]) from None
