"""What one job runs, decided once from its composed config: the one place the rules about its stages live.

- A whole retriever (a class with `retrieve(question, k)`, e.g. a user's LangChain retriever) chunks and
  indexes on its own: the job has no chunker and no store.
- The embedder and the store are built only to be handed to the stages whose constructors name them: a job
  whose stages take neither (BM25, most whole retrievers) has neither, so a grid of `retriever=bm25` over three
  embedders and three stores is one configuration, not nine.
- A generator whose class is disabled (`generator=none`) answers nothing, so nothing is judged: the job
  has no judge, and its config none (a `judge=none` beside a generator stays, as a choice made).
- A job that generates nothing leaves out the metrics' settings that only score answers (`answer_embedder`,
  `correctness_weight`), as it leaves out the judge.
- A disabled relevance judge (`relevance_judge=none`) leaves context_relevance to the span labels.
- The first stage runs at max(k, reranker.candidates, depth), so a reranker always has its candidates.
- A `none` query rewriter, cut-off, augmenter or compressor (`query=none`, `cutoff=none`, ...) searches with the
  question and passes the top k on as they are: the job does not have the stage, nor its config, so its
  fingerprint is that of a job before these stages existed.
- The parser is read by the dataset that names it (`dataset=files`: `parser: ${parser}`) and is part of its config
  there; a dataset that reads no files through it (sotu_qa, SQuAD, ...) does not have it, nor its name in the job's.
- A whole retriever has no chunking, so an augmenter cannot add a chunk's neighbouring chunks (`augment.chunks`);
  it retrieves for the question it is given, so its questions are not rewritten (`query`).

The plan's config drops the groups the job does not use and records the depth that runs, so its params,
its `config.yaml` and its fingerprint all say what was computed. Deciding needs only the config and the
component classes (imported, never built): the plan is made before any model loads.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf

from ragsweep.identity import LABEL_KEY, code_versions, config_fingerprint, config_label, fingerprint, group_choices
from ragsweep.metrics import registry
from ragsweep.metrics.relevance import RELEVANCE_JUDGED
from ragsweep.runner.errors import ConfigError, closest
from ragsweep.runner.targets import enabled, reranker_candidates, target_class, whole_retriever
from ragsweep.tracking.tags import dotted_params
from ragsweep.tracking.provenance import sweep_name

log = logging.getLogger(__name__)

# The metric stages every job scores: span metrics, and context_relevance from the span labels.
ALWAYS_SCORED = ("retrieval", "relevance", "cost")
# The groups a whole retriever replaces: it chunks and indexes on its own.
WHOLE_RETRIEVER_REPLACES = ("chunker", "store")
# Groups built only to be handed to the stages that take them (`build` hands each stage the built groups its
# constructor names), and the stages that can take them.
HANDED_GROUPS = ("embedder", "store")
TAKING_STAGES = ("chunker", "retriever", "reranker", "compress", "generator")
ONLY_WITH_ANSWERS = ("judge",)  # groups that judge answers: a job that generates none has none
# Settings of a group that only score generated answers: a job that generates none leaves them out of its config,
# params and fingerprint, as it leaves out the judge (BM25 leaves out the embedder it does not take).
ANSWER_ONLY_SETTINGS = {"metrics": ("answer_embedder", "correctness_weight")}
OPTIONAL_STAGES = ("query", "cutoff", "augment", "compress")  # a `none` option leaves the stage out of the job


@dataclass(frozen=True)
class JobNaming:
    """What Hydra knows about a job that names it: its overrides as one string (`chunker=fixed,k=3`), the
    primary config's name and each group's chosen option. The caller reads them; the plan reads no global."""

    overrides: str = ""
    config_name: str | None = None
    choices: Mapping[str, str | None] = field(default_factory=dict)

    @classmethod
    def from_hydra(cls, hydra: Any) -> JobNaming:
        """From a `hydra` config node (`HydraConfig.get()` in a job, or a composed config's `cfg.hydra`)."""
        return cls(str(hydra.job.override_dirname or ""), hydra.job.config_name, dict(hydra.runtime.choices))


@dataclass(frozen=True)
class JobPlan:
    """One job's stages, depth and identity, resolved from its config (see the module's rules)."""

    config: DictConfig  # read-only: unused groups removed, depth raised to what runs
    resolved: Mapping[str, Any]  # the config as plain values: what config.yaml, params and fingerprint see
    whole_retriever: bool
    generates: bool
    judges: bool
    judges_relevance: bool
    k: int
    candidates: int  # first-stage hits the reranker reads; 0 without a reranker
    depth: int
    label: str  # how tables, plots and run names call the configuration; not part of its identity
    sweep: str  # the named grid (`+sweep=<name>`), or `adhoc`
    params: Mapping[str, Any]  # logged to MLflow: every resolved key, plus each used group's option name
    targets: Mapping[str, str]  # the `_target_` of each stage group the job builds
    versions: Mapping[str, str] = field(default_factory=dict)  # the versions its classes declare, by where named
    unused: tuple[str, ...] = ()  # stage groups the composed config had that the job does not build
    # settings of built groups the job does not read (ANSWER_ONLY_SETTINGS), by group: in no fingerprint but the
    # unversioned one, which runs made before the plan left them out still share
    unread: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def stages(self) -> tuple[str, ...]:
        """The config groups the job builds, in the order data flows through them."""
        return tuple(self.targets)

    @property
    def metric_stages(self) -> frozenset[str]:
        """The registry stages whose metrics the job produces (`ragsweep.metrics.registry.Metric.stage`)."""
        return frozenset({*ALWAYS_SCORED, *(["answer"] if self.generates else []),
                          *(["judged"] if self.judges else [])})

    def logs(self, name: str) -> bool:
        """Whether the job logs registry metric `name`: one of its stages' metrics or a latency, unless it needs the
        whole chunking and the job has a whole retriever, is the judged relevance and the job has no relevance
        judge, times generation and the job generates nothing, or counts rewrites and the job rewrites none."""
        metric = registry.METRICS.get(name)
        return (metric is not None and metric.stage in {*self.metric_stages, "latency"}
                and not (self.whole_retriever and metric.whole_chunking)
                and (self.judges_relevance or name not in RELEVANCE_JUDGED)
                and (self.generates or not name.startswith("generation_ms"))
                and ("query" in self.targets or not name.startswith("query_")))

    def fingerprint(self, dataset_fingerprint: str) -> str:
        """The configuration's identity over this dataset's content and its code's versions: equal fingerprints,
        equal numbers."""
        return config_fingerprint(dict(self.resolved), dataset_fingerprint, self.versions)

    def point_identity(self) -> str:
        """The identity before the dataset is read, with its settings in place of its content's fingerprint: equal
        for two points of a sweep that compute the same numbers (`ragsweep.runner.distinct`)."""
        return self.fingerprint(fingerprint("dataset settings", self.resolved.get("dataset")))

    def unversioned_fingerprint(self, dataset_fingerprint: str) -> str:
        """The identity without its code's versions and with the settings it does not read: shared by the runs of
        this configuration that older code made (those before the answer-only settings left a retrieval-only
        identity included), which a sweep finds to say why it runs the configuration again."""
        whole = {key: {**value, **self.unread[key]} if key in self.unread else value
                 for key, value in self.resolved.items()}
        return config_fingerprint(whole, dataset_fingerprint)


# The stage groups in data-flow order; a job builds those its plan keeps.
STAGE_GROUPS = ("parser", "dataset", "chunker", "embedder", "store", "query", "retriever", "reranker", "cutoff",
                "augment", "compress", "generator", "judge", "relevance_judge", "metrics")
# Top-level settings a job reads besides its stage groups; anything else (`+foo=1`) is a typo or a
# setting of another tool, and would silently become part of the configuration's identity.
SETTINGS = ("k", "depth", "experiment", "optimized_metric", "bootstrap_samples", "fail_fast", "force",
            "tracking", "paths", "cache", LABEL_KEY, "race", "hydra", "prices", "budget")
CACHE_KEYS = ("enabled", "dir", "locks", "fresh", "embedding_shard")
# what cache.fresh may name
FRESH_STAGES = ("chunks", "rewrites", "retrieval", "rerank", "answers", "claims", "verdicts")


def plan_job(cfg: DictConfig, naming: JobNaming | None = None) -> JobPlan:
    """The plan of the job `cfg` describes (a composed config; its `hydra` node, if any, is left out).

    Raises ConfigError for a top-level or cache key no stage reads, for a `k`, `depth` or `bootstrap_samples`
    that is not a positive integer, and for a reranker that reads fewer candidates than k. Components are not
    built, so their own errors come from `build`; a `_target_` that does not import counts as enabled here, so
    that `build` names it.
    """
    check_settings(cfg)
    k = positive_int(cfg, "k")
    if "bootstrap_samples" in cfg:
        positive_int(cfg, "bootstrap_samples")
    whole = whole_retriever(OmegaConf.select(cfg, "retriever._target_"))
    candidates = reranker_candidates(OmegaConf.select(cfg, "reranker._target_"),
                                     OmegaConf.select(cfg, "reranker.candidates")) if "reranker" in cfg else 0
    if candidates and candidates < k:
        raise ConfigError(f"reranker.candidates ({candidates}) must be >= k ({k}); raise reranker.candidates "
                          "or lower k")
    if whole and candidates:
        raise ConfigError("reranker: a whole retriever returns its final ranking, so there is nothing to rerank; "
                          "use reranker=none")
    absent = [group for group in OPTIONAL_STAGES if group not in cfg or not _enabled(cfg, group)]
    if whole and "query" not in absent:
        raise ConfigError("query: a whole retriever retrieves for the question it is given, so there is no search to "
                          "rewrite; use query=none")
    if whole and "augment" not in absent and OmegaConf.select(cfg, "augment.chunks"):
        raise ConfigError("augment.chunks: a whole retriever has no chunking, so a passage has no neighbouring "
                          "chunks; widen by characters instead (augment.chunks=0 augment.characters=400)")
    generates = "generator" in cfg and _enabled(cfg, "generator")
    judges = generates and "judge" in cfg and _enabled(cfg, "judge")
    judges_relevance = "relevance_judge" in cfg and _enabled(cfg, "relevance_judge")
    depth = max(k, candidates, positive_int(cfg, "depth"))
    unused = _unused_groups(cfg, whole, generates)
    dropped = {*unused, *absent, *([] if generates else ONLY_WITH_ANSWERS),
               *([] if judges_relevance else ["relevance_judge"]), "parser"}  # used, it is the dataset's
    if depth != cfg.depth:
        log.info("depth=%s raised to %d (k or reranker.candidates is larger)", cfg.depth, depth)
    job = OmegaConf.masked_copy(cfg, [key for key in cfg if key != "hydra"]) if "hydra" in cfg else cfg
    resolved = {key: value for key, value in OmegaConf.to_container(job, resolve=True).items()
                if key not in dropped}
    resolved["depth"] = depth
    unread = {}
    for group, keys in ({} if generates else ANSWER_ONLY_SETTINGS).items():
        if isinstance(resolved.get(group), dict):
            unread[group] = {key: value for key, value in resolved[group].items() if key in keys}
            resolved[group] = {key: value for key, value in resolved[group].items() if key not in keys}
    config = OmegaConf.create(resolved)
    OmegaConf.set_readonly(config, True)
    unnamed = (*unused, *([] if "parser" in (cfg.get("dataset") or {}) else ["parser"]))
    label, choices = ("run", {}) if naming is None else (
        config_label(_without(naming.overrides, unnamed), naming.config_name, cfg.get(LABEL_KEY)),
        group_choices(naming.choices))
    # not `race`: the round changes each time a race extends the configuration's run
    params = {**dotted_params({key: value for key, value in resolved.items() if key != "race"}),
              **{group: option for group, option in choices.items() if group not in unnamed}}
    targets = {group: str(resolved[group]["_target_"]) for group in STAGE_GROUPS
               if isinstance(resolved.get(group), dict) and "_target_" in resolved[group]}
    return JobPlan(config, resolved, whole, generates, judges, judges_relevance, k, candidates, depth, label,
                   sweep_name(naming.choices if naming else {}), params, targets,
                   code_versions(resolved, target_class), unused, unread)


def _unused_groups(cfg: DictConfig, whole: bool, generates: bool) -> tuple[str, ...]:
    """The stage groups of `cfg` the job does not build, in data-flow order: what a whole retriever replaces, and
    each handed group no stage it builds takes (a class that does not import takes everything: `build` names it)."""
    replaced = WHOLE_RETRIEVER_REPLACES if whole else ()
    taking = [target_class(OmegaConf.select(cfg, f"{stage}._target_")) for stage in TAKING_STAGES
              if stage in cfg and stage not in replaced and (stage != "generator" or generates)]
    untaken = {group for group in HANDED_GROUPS if group in cfg and not any(
        component is None or group in inspect.signature(component).parameters for component in taking)}
    return tuple(group for group in STAGE_GROUPS if group in {*replaced, *untaken})


def _without(overrides: str, groups: Sequence[str]) -> str:
    """A job's overrides (`embedder=e5,k=3,retriever=bm25`) without those of `groups` (`k=3,retriever=bm25`)."""
    kept = [item for item in re.split(r",(?=[\w.+~@/-]+=)", overrides) if item
            and re.sub(r"^[+~]+", "", item).split("=")[0].split(".")[0] not in groups]
    return ",".join(kept)


GRID_GROUP = "sweep"  # the named grids' config group (+sweep=NAME)


def check_settings(cfg: DictConfig) -> None:
    """Refuse top-level keys and cache keys that no stage reads, naming the closest one that exists."""
    known = (*STAGE_GROUPS, *SETTINGS)
    for key in cfg:
        if key == GRID_GROUP:  # Hydra puts a group's file under its group's key unless the file says otherwise
            raise ConfigError(f"{GRID_GROUP}: a named grid's settings ({', '.join(map(str, cfg[key] or {}))}) landed "
                              f"under a '{GRID_GROUP}:' key, as its file lacks the header: make `# @package _global_` "
                              f"the first line of {GRID_GROUP}/<name>.yaml, as in the packaged grids")
        if key not in known:
            raise ConfigError(f"{key}: no stage reads this key; {closest(key, known)}"
                              f"the keys ragsweep reads are {', '.join(known[:-1])}")
    for key in cfg.get("cache") or {}:
        if key not in CACHE_KEYS:
            raise ConfigError(f"cache.{key}: the cache reads only {', '.join(CACHE_KEYS)}; "
                              f"{closest(key, CACHE_KEYS, 'cache.')}remove cache.{key}")
    unknown = [str(stage) for stage in (cfg.get("cache") or {}).get("fresh") or () if stage not in FRESH_STAGES]
    if unknown:
        raise ConfigError(f"cache.fresh: {', '.join(unknown)} is not a cached stage; name some of "
                          f"{', '.join(FRESH_STAGES)}")


def check_objectives(optimized_metric: Any, plan: JobPlan) -> None:
    """`optimized_metric` names metrics this configuration logs: one to rank by (a per-question quality), or a
    list whose first is that and whose others are any metrics with a direction (`latency_ms_p95`, a token count),
    for a multi-objective sweep. ConfigError (one line) otherwise."""
    metrics = registry.objectives(optimized_metric)
    if not metrics:
        return
    # a job's mean is what a sweep optimizes
    known = [name for name in registry.names(rankable=True, per_question=True) if plan.logs(name)]
    listed = not isinstance(optimized_metric, str)
    shown = f"[{','.join(metrics)}]" if listed else metrics[0]
    if listed and len(metrics) == 1:
        raise ConfigError(f"optimized_metric={shown}: a list names two or more metrics to trade off; for one, "
                          f"write optimized_metric={metrics[0]}")
    if metrics[0] not in known:
        if listed:
            raise ConfigError(f"optimized_metric={shown}: the first metric ranks the sweep, and {metrics[0]} is not "
                              f"one to rank this configuration by; put one of {', '.join(known)} first")
        raise ConfigError(f"optimized_metric={shown} is not a metric of this configuration; choose one of "
                          f"{', '.join(known)}")
    if len(set(metrics)) < len(metrics):
        raise ConfigError(f"optimized_metric={shown}: a metric is named twice; name each once")
    traded = [name for name, declared in registry.METRICS.items() if declared.direction != "none" and plan.logs(name)]
    for name in metrics[1:]:
        if name not in traded:
            raise ConfigError(f"optimized_metric={shown}: {name} is not a metric this configuration logs with a "
                              f"direction; trade {metrics[0]} off against one of {', '.join(traded)}")


def positive_int(cfg: DictConfig, key: str) -> int:
    value = cfg.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{key} must be a positive integer, got {value!r}; set e.g. {key}=5")
    return value


def _enabled(cfg: DictConfig, group: str) -> bool:
    return enabled(OmegaConf.select(cfg, f"{group}._target_"))
