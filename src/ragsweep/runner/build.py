"""Instantiate every stage from the config, failing on bad values before any work starts."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, MissingMandatoryValue, OmegaConf

from ragsweep.cache import StageCache
from ragsweep.data.base import DatasetLoader
from ragsweep.data.loading import loaded
from ragsweep.embedding.cached import cached_embedder
from ragsweep.generation.prompts import Prompt, load_prompt
from ragsweep.hydra_internals import locate
from ragsweep.identity import RUNNER_KEYS, code_versions, keyed_by_model, semantic_config, stage_key
from ragsweep.judging.calibration.claim_labels import ClaimLabel, load_claim_labels
from ragsweep.metrics.costs import Prices
from ragsweep.metrics.evaluate import SpanEvaluator
from ragsweep.metrics.judged import TRIAD_WEIGHTS
from ragsweep.runner.errors import ConfigError, closest, in_group
from ragsweep.runner.plan import JobPlan, check_objectives, plan_job
from ragsweep.runner.targets import enabled, target_class
from ragsweep.tracking.base import Tracker


@dataclass
class Built:
    """A stage and what identifies its output: its config (minus speed-only keys) and its inputs'."""

    component: Any
    signature: dict[str, Any]


@dataclass
class Pipeline:
    plan: JobPlan
    dataset: DatasetLoader
    chunker: Built | None  # None with a whole retriever (one that chunks and indexes on its own)
    retriever: Built
    reranker: Built
    evaluator: SpanEvaluator
    tracker: Tracker
    cache: StageCache
    query: Built | None = None  # None: query=none, each question is searched as asked
    query_max_failure_rate: float = 0.05  # share of questions whose rewrite may fail before the job fails
    cutoff: Built | None = None  # None: cutoff=none, every one of the top k is passed on
    augmenter: Built | None = None  # None: augment=none, the passed-on chunks are read as they are
    compressor: Built | None = None  # None: compress=none, passages are passed on whole
    generator: Built | None = None  # None: generator=none, a retrieval-only job
    prompt: Prompt | None = None
    max_error_rate: float = 0.05  # share of questions whose generation may fail before the job fails
    judge: Built | None = None  # None: judge=none or no generator
    max_failure_rate: float = 0.05  # share of judge calls that may fail before the job fails
    triad_weights: tuple[float, float, float] = TRIAD_WEIGHTS
    judge_auc: float | None = None  # the judge's held-out ROC AUC on labelled claims, shown beside its metrics
    claim_labels: list[ClaimLabel] | None = None  # people's verdicts on some claims (judge.labels)
    relevance_judge: Built | None = None  # None: relevance_judge=none; context_relevance comes from spans alone
    relevance_max_failure_rate: float = 0.05
    relevance_context_weight: float = 0.0  # how far a passage's score moves by its margin over the others retrieved
    prices: Prices = field(default_factory=Prices)  # what each question's calls cost in money (`prices`)
    embedder: Built | None = None  # the retriever's, cached per text; None for a job that embeds nothing


def build(plan: JobPlan | DictConfig, preflight: bool = True, objects: Mapping[str, Any] | None = None) -> Pipeline:
    """Every stage `plan` keeps, checked; with `preflight`, components that load a model also load it now
    (models load once per process, so a sweep's check before its first job and the job share them). A
    composed config is planned first (`plan_job`).

    `objects` are a Python caller's own components by group (`ragsweep.Evaluation`): each is handed, as
    `component`, to the wrapper class its group's config names (e.g. `ragsweep.chunking.own.OwnChunker`).
    """
    plan = plan if isinstance(plan, JobPlan) else plan_job(plan)
    cfg, objects = plan.config, objects or {}
    cache = StageCache.from_settings(group_config(cfg, "cache"))
    stages = {"cache": Built(cache, {})}
    if "embedder" in plan.targets:
        embedder = instantiate_stage(cfg, "embedder", {}, cache, objects=objects)
        embedder.component = cached_embedder(embedder.component, cache, embedder.signature)
        stages["embedder"] = embedder
    if "store" in plan.targets:
        stages["store"] = instantiate_stage(cfg, "store", {}, cache)
    reranker = instantiate_stage(cfg, "reranker", stages, cache)
    dataset = instantiate_stage(cfg, "dataset", {"cache": stages["cache"]}, cache, objects=objects)
    retriever = instantiate_stage(cfg, "retriever", stages, cache, objects=objects)
    pipeline = Pipeline(
        plan=plan,
        dataset=dataset.component,
        chunker=None if plan.whole_retriever else instantiate_stage(cfg, "chunker", stages, cache, objects=objects),
        retriever=retriever,
        reranker=reranker,
        evaluator=instantiate_stage(cfg, "metrics", {}, cache).component,
        tracker=instantiate_stage(cfg, "tracking", {}, cache).component,
        cache=cache,
        query=instantiate_stage(cfg, "query", {}, cache) if "query" in plan.targets else None,
        cutoff=instantiate_stage(cfg, "cutoff", {}, cache) if "cutoff" in plan.targets else None,
        augmenter=instantiate_stage(cfg, "augment", {}, cache) if "augment" in plan.targets else None,
        compressor=instantiate_stage(cfg, "compress", stages, cache) if "compress" in plan.targets else None,
        embedder=stages.get("embedder"),
    )
    try:
        pipeline.prices = Prices.from_config(OmegaConf.to_container(cfg.prices) if "prices" in cfg else None)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if pipeline.query is not None:
        pipeline.query_max_failure_rate = _bounded(group_config(cfg, "query"), "query", "max_failure_rate", 0.05)
    _add_generator(cfg, pipeline, stages, cache, objects)
    _add_judge(cfg, pipeline, {"dataset": dataset}, cache)
    _add_relevance_judge(cfg, pipeline, {"dataset": dataset}, cache)
    check_objectives(cfg.get("optimized_metric"), plan)
    if preflight:
        for group in ("chunker", "query", "retriever", "reranker", "embedder", "generator", "judge", "relevance_judge"):
            stage = getattr(pipeline, group)
            if stage is not None:
                _preflight(stage.component, group if isinstance(cfg[group].get("generator"), DictConfig) else None)
    return pipeline


def _add_generator(cfg: DictConfig, pipeline: Pipeline, stages: dict[str, Built], cache: StageCache,
                   objects: Mapping[str, Any]) -> None:
    """The generator stage, its prompt and error budget; nothing for `generator=none` (or no group)."""
    if "generator" not in cfg:
        return
    settings = group_config(cfg, "generator")
    generator = instantiate_stage(cfg, "generator", stages, cache, objects=objects)
    if not pipeline.plan.generates:
        return
    rate = _bounded(settings, "generator", "max_error_rate", 0.05)
    try:
        pipeline.prompt = load_prompt(str(settings.get("prompt", "qa")))
    except ValueError as error:
        raise ConfigError(str(error)) from None
    pipeline.generator, pipeline.max_error_rate = generator, rate


def _add_judge(cfg: DictConfig, pipeline: Pipeline, stages: dict[str, Built], cache: StageCache) -> None:
    """The judge, its failure budget and triad weights; nothing without a generator or for `judge=none`.
    A judge that asks for `dataset` gets the job's (the trained judge learns from it)."""
    if not pipeline.plan.judges:
        return
    settings = group_config(cfg, "judge")
    judge = judge_stage(cfg, stages, cache)
    if judge is None:
        return
    rate = _bounded(settings, "judge", "max_failure_rate", 0.05)
    weights = settings.get("triad_weights", list(TRIAD_WEIGHTS))
    if (not isinstance(weights, list) or len(weights) != 3 or any(isinstance(w, bool) or not isinstance(w, (int, float))
                                                                  or w < 0 for w in weights) or not sum(weights) > 0):
        raise ConfigError(f"judge.triad_weights must be three weights >= 0 (context_relevance, groundedness, "
                          f"answer_relevance) with a positive sum, got {weights!r}; e.g. [0.35,0.35,0.30]")
    auc = settings.get("auc")
    if auc is not None and (isinstance(auc, bool) or not isinstance(auc, (int, float)) or not 0 <= auc <= 1):
        raise ConfigError(f"judge.auc must be null or the judge's measured ROC AUC in [0, 1], got {auc!r}")
    pipeline.judge, pipeline.max_failure_rate, pipeline.judge_auc = judge, rate, auc
    if settings.get("labels"):
        try:
            pipeline.claim_labels = load_claim_labels(settings["labels"])
        except ValueError as error:
            raise ConfigError(str(error)) from None
        _check_label_questions(settings["labels"], pipeline.claim_labels, stages["dataset"].component)
    pipeline.triad_weights = tuple(float(w) for w in weights)


def _check_label_questions(path: str, labels: Sequence[ClaimLabel], dataset: Any) -> None:
    """Refuse people's labels none of whose question ids is a question of the dataset: they would correct nothing."""
    dataset = loaded(dataset)
    questions = {query.id for query in getattr(dataset, "queries", ())}
    ids = sorted({label.id for label in labels})
    if questions and not questions.intersection(ids):
        raise ConfigError(f"judge.labels={path}: none of its question ids ({', '.join(ids[:3])}"
                          f"{', ...' if len(ids) > 3 else ''}) is a question of dataset {dataset.name}; label "
                          "claims of this dataset's runs (the ids of their per_query.jsonl)")


def _add_relevance_judge(cfg: DictConfig, pipeline: Pipeline, stages: dict[str, Built], cache: StageCache) -> None:
    """The relevance judge and its failure budget; nothing for `relevance_judge=none` (or no group). It judges
    retrieved passages, so it runs with or without a generator."""
    if not pipeline.plan.judges_relevance:
        return
    judge = judge_stage(cfg, stages, cache, "relevance_judge")
    if judge is None:
        return
    settings = group_config(cfg, "relevance_judge")
    rate = _bounded(settings, "relevance_judge", "max_failure_rate", 0.05)
    weight = _bounded(settings, "relevance_judge", "context_weight", 0.0, high=10, hint="0 scores each passage alone")
    pipeline.relevance_judge, pipeline.relevance_max_failure_rate = judge, rate
    pipeline.relevance_context_weight = weight


def _bounded(settings: Mapping[str, Any], group: str, key: str, default: float, high: float = 1,
             hint: str = "e.g. 0.05") -> float:
    """A runner setting that must be a number in [0, high] (a share when high is 1), else one line naming it."""
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= high:
        kind = "a share between 0 and 1" if high == 1 else f"a number between 0 and {high:g}"
        raise ConfigError(f"{group}.{key} must be {kind}, got {value!r}; {hint}")
    return float(value)


def judge_stage(cfg: DictConfig, stages: dict[str, Built], cache: StageCache, group: str = "judge",
                keyed: bool = True) -> Built | None:
    """The judge of `cfg[group]` (None for `none`), built the one way every command builds a judge. With `keyed`,
    a judge built from data (the trained judges, a fitted ensemble) has its model in its signature, so verdicts
    of two models never share cache keys; `calibrate` builds it unkeyed, since it may be about to fit it."""
    if not enabled(OmegaConf.select(cfg, f"{group}._target_")):
        return None
    judge = instantiate_stage(cfg, group, stages, cache)
    if not keyed:
        return judge
    try:
        model_key = getattr(judge.component, "model_key", None)
    except ValueError as error:
        raise ConfigError(f"{group}: {error}") from None
    judge.signature = keyed_by_model(judge.signature, model_key)
    return judge


def _unknown_parameters(group: str, config: dict[str, Any], component: type, injected) -> None:
    """A key the component's constructor does not take, named with the keys it does take."""
    parameters = inspect.signature(component).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    takes = [name for name in parameters if name not in injected and name != "self"]
    for key in config:
        if not key.startswith("_") and key not in parameters:
            raise ConfigError(f"{group}.{key}: {component.__name__} takes no '{key}'; "
                              f"{closest(key, takes, group + '.')}its keys are "
                              f"{', '.join(f'{group}.{name}' for name in takes) or 'none'}")


def instantiate_stage(cfg: DictConfig, group: str, stages: dict[str, Built], cache: StageCache,
                      objects: Mapping[str, Any] | None = None) -> Built:
    """Build `cfg[group]`, handing it the built stages its constructor asks for by name; the group's runner keys
    (`identity.RUNNER_KEYS`) are the runner's settings, kept from the constructor and from the signature. A caller's
    object for the group (`objects[group]`) is handed to the wrapper as `component`, past Hydra, which
    would copy it or turn a dataclass into a config."""
    runner_keys = RUNNER_KEYS.get(group, ())
    config = {key: value for key, value in group_config(cfg, group).items() if key not in runner_keys}
    try:
        component_class = locate(config["_target_"])
    except (ImportError, ValueError) as error:  # a bad _target_
        lines = str(error).splitlines()
        reason = str(error.__cause__) if error.__cause__ else lines[0]
        raise ConfigError(f"{group}._target_={config['_target_']} cannot be imported ({reason}); "
                          "check the module path and class name") from None
    _unknown_parameters(group, config, component_class, stages)
    given = {name: stage for name, stage in stages.items() if name in inspect.signature(component_class).parameters}
    signature = stage_key(config, {name: stage.signature for name, stage in given.items()},
                          code_versions(config, target_class))
    if objects and group in objects:
        try:
            component = component_class(**{key: value for key, value in config.items() if not key.startswith("_")},
                                        **{name: stage.component for name, stage in given.items()},
                                        component=objects[group])
        except (ValueError, TypeError) as error:
            raise ConfigError(str(error) if str(error).startswith(group) else f"{group}: {error}") from None
        return Built(component, signature)
    try:
        node = OmegaConf.create(config) if runner_keys else cfg[group]  # resolved: a copy has no root to resolve in
        component = instantiate(node, **{name: stage.component for name, stage in given.items()})
    except InstantiationException as error:
        cause = error.__cause__ or error
        if isinstance(cause, (ValueError, TypeError)):  # a nested generator's, worded for the group holding it
            raise ConfigError(f"{group}: {in_group(str(cause), group) if 'generator' in config else cause}") from None
        raise ConfigError(f"{group}: cannot build {config.get('_target_')}: {cause}") from None
    for key, nested in config.items():  # a component's own embedder (e.g. a reranker's) is cached too
        inner = getattr(component, key, None)
        if key != "component" and isinstance(nested, dict) and "_target_" in nested and hasattr(inner, "encode"):
            setattr(component, key, cached_embedder(inner, cache, semantic_config(nested)))
    return Built(component, signature)


def group_config(cfg: DictConfig, group: str) -> dict[str, Any]:
    if group not in cfg:
        raise ConfigError(f"config group {group!r} is missing; add '{group}: <option>' to the defaults list")
    try:
        return OmegaConf.to_container(cfg[group], resolve=True, throw_on_missing=True)
    except MissingMandatoryValue as error:
        key = str(error.full_key) if str(error.full_key).startswith(group) else f"{group}.{error.full_key}"
        raise ConfigError(f"{key} is required; set it on the command line, e.g. {key}=<value>") from None


def _preflight(component: Any, asking: str | None = None) -> None:
    """Let a component prove it can work (e.g. load a model) before any run starts; a model held by the `asking`
    group's component has its settings named in that group (`query/generator=transformers`)."""
    check = getattr(component, "preflight", None)
    if check is None:
        return
    try:
        check()
    except (OSError, ValueError, RuntimeError) as error:
        line = str(error).splitlines()[0]
        raise ConfigError(in_group(line, asking) if asking else line) from None
