"""What identifies a result, decided here and nowhere else: which settings enter a fingerprint, which are left out
(and why), which a run's name leaves out; and what names a job: its label and group choices.

Two jobs with the same config fingerprint compute the same numbers, so a sweep can skip one whose
fingerprint already has a finished run, and an exported best config can be checked against it. A stage's
cache key holds its component's `semantic_config`, so speed-only settings never split a cache entry.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any


KEY_SCHEME = "1"  # how keys are made: raised only when a change in it must part every key and fingerprint from old ones


def fingerprint(*parts: Any) -> str:
    """sha256 of JSON-serialisable parts (dict keys sorted), with `KEY_SCHEME` mixed in: every cache key and
    fingerprint is made by it."""
    payload = json.dumps([KEY_SCHEME, *parts], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


# Settings that change how fast a component runs or where it keeps its files, not what it returns; left out of
# cache keys and fingerprints, so the same configuration is the same run in another project folder or clone.
NON_SEMANTIC_KEYS = frozenset({"batch_size", "threads", "progress", "concurrency", "timeout", "max_retries",
                               "api_key_env",
                               "cache_dir",  # where a trained judge keeps its model: ${cache.dir}, a folder
                               "auc"})  # auc: a judge's measured agreement, recorded with its results, not a setting
# Keys of a group that the runner reads (a failure budget, a prompt's name, a judge's weights), never its component's
# constructor: kept out of the component, so out of its stage's cache key; the runner keys what they change itself.
RUNNER_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "query": ("max_failure_rate",),
    "generator": ("prompt", "max_error_rate"),
    "judge": ("max_failure_rate", "triad_weights", "auc", "labels"),
    "relevance_judge": ("max_failure_rate", "context_weight"),
})
# A judge's runner keys that change no judged number (triad_weights weighs them into triad_overall): two runs whose
# judges differ only in these, or in speed-only keys (NON_SEMANTIC_KEYS), were judged alike.
JUDGE_NOT_SCORING = tuple(key for key in RUNNER_KEYS["judge"] if key != "triad_weights")
# Keys a run's name (Hydra's override_dirname) leaves out: conf/ragsweep.yaml's
# hydra.job.config.override_dirname.exclude_keys, which a test holds equal to this.
NOT_IN_NAMES = ("experiment", "sweep", "race", "embedding_helper", "force", "fail_fast", "optimized_metric", "cache",
                "tracking", "cache.dir", "cache.enabled", "cache.locks", "cache.embedding_shard", "prices",
                "prices.cpu_second", "budget", "tracking.trace_queries", "tracking.http_retries",
                "tracking.per_query_top",
                "paths.root", "paths.data", "paths.outputs", "paths.mlruns", "paths.cache", "tracking.uri",
                "tracking.artifacts", "cache.fresh")
LABEL_KEY = "label"  # set by an exported best config (conf/best/<name>.yaml) to the winner's label
# Keys that say where results go, how the sweep behaves or what money its calls cost, never what a job computes
# (race: which questions a racing round runs, not the configuration).
NON_RESULT_KEYS = frozenset({"paths", "tracking", "cache", "experiment", "optimized_metric", "force", "fail_fast",
                             LABEL_KEY, "race", "prices", "budget"})
# what they choose is the dataset's fingerprint (`questions`: dataset=files's questions file, wherever it is)
DATASET_CONTENT_KEYS = frozenset({"path", "questions", "limit", "sample", "seed"})


def config_fingerprint(resolved: dict[str, Any], dataset_fingerprint: str,
                       versions: Mapping[str, str] | None = None) -> str:
    """sha256 of a planned job's resolved config (`JobPlan.resolved`: the groups it does not use already
    dropped) minus output paths and speed-only keys, plus the dataset's content (its path is left to that
    fingerprint), plus the `versions` its classes declare (`code_versions`). Use `JobPlan.fingerprint`. The
    questions a dataset's `limit`, `sample` and `seed` choose (and those of the file `questions` names) are in that
    fingerprint too, so those keys are left out here (a configuration without them keeps its fingerprint), as are no versions (a configuration whose
    classes declare none keeps the fingerprint it had before classes could)."""
    tree = {key: value for key, value in resolved.items() if key not in NON_RESULT_KEYS and key != "hydra"}
    if isinstance(tree.get("dataset"), dict):
        tree["dataset"] = {key: value for key, value in tree["dataset"].items() if key not in DATASET_CONTENT_KEYS}
    if versions:
        return fingerprint("config", semantic_config(tree), dataset_fingerprint, {"versions": dict(versions)})
    return fingerprint("config", semantic_config(tree), dataset_fingerprint)


def code_versions(resolved: Mapping[str, Any], locate: Callable[[str], type | None]) -> dict[str, str]:
    """The `version` (`ragsweep.contract.VERSION`) each class named by a `_target_` in the config declares, by
    where it is named (`reranker`, `reranker.rescoring_embedder`); `locate` gives a target's class, or None."""
    found: dict[str, str] = {}

    def walk(node: Any, where: str) -> None:
        if isinstance(node, Mapping):
            component = locate(node["_target_"]) if isinstance(node.get("_target_"), str) else None
            version = getattr(component, "version", None)
            if isinstance(version, str):
                found[where] = version
            for key, value in node.items():
                walk(value, f"{where}.{key}" if where else str(key))
        elif isinstance(node, list):
            for position, value in enumerate(node):
                walk(value, f"{where}.{position}")

    walk(resolved, "")
    return found


def stage_key(config: Mapping[str, Any], inputs: Mapping[str, Any], versions: Mapping[str, str]) -> dict[str, Any]:
    """What a stage's cache entries are keyed by: its component's config less speed-only keys, the keys of the stages
    handed to it (so a raised version or changed setting upstream recomputes it) and the versions of the classes its
    config names (none declared: the key as it was before classes could declare one)."""
    return {"config": semantic_config(dict(config)), **inputs, **({"versions": dict(versions)} if versions else {})}


def keyed_by_model(key: Mapping[str, Any], model: str | None) -> dict[str, Any]:
    """A stage's key for the results of the model it loads or trains (a trained judge's `model_key`), so two models'
    results never share an entry; None (a judge with no model of its own) leaves the key as it is."""
    return dict(key) if model is None else {**key, "model": model}


def versions_text(versions: Mapping[str, str]) -> str:
    """Code versions as a run's tag shows them: `reranker=2, metrics=1`."""
    return ", ".join(f"{where}={version}" for where, version in sorted(versions.items()))


def semantic_config(config: Any) -> Any:
    """A component config without the keys that cannot change its output."""
    if isinstance(config, dict):
        return {k: semantic_config(v) for k, v in config.items() if k not in NON_SEMANTIC_KEYS}
    if isinstance(config, list):
        return [semantic_config(v) for v in config]
    return config


def config_label(override_dirname: str, config_name: str | None, exported: str | None) -> str:
    """A configuration's name: the job's overrides (`chunker=fixed,k=3`), else the winner's label an exported
    best config carries (so its rerun is named like the run it reproduces), else `defaults` or the config's name."""
    if override_dirname:
        return _file_names(override_dirname)
    if exported:
        return str(exported)
    return "defaults" if config_name in (None, "config") else config_name


def _file_names(overrides: str) -> str:
    """`dataset.path=/data/team/2026/questions.json` as `dataset.path=questions.json`: a run's name stays short
    (its dataset's fingerprint and `dataset.path` param say exactly which file)."""
    return re.sub(r"((?:^|,)[\w.+~]*path=)[^,]*/", r"\1", overrides)


def group_choices(choices: Mapping[str, Any]) -> dict[str, str]:
    """The option of each of ragsweep's stage groups (`chunker: recursive`) from Hydra's runtime choices.

    Logged as params, so `params.chunker = 'fixed'` filters in the UI and in `ragsweep best --where`.
    Hydra's own groups and those that change no number (paths, cache, sweep) are left out.
    """
    return {group: str(option) for group, option in sorted(choices.items())
            if option is not None and group != "hydra" and not group.startswith("hydra/")
            and group not in NON_RESULT_KEYS and group != "sweep"}
