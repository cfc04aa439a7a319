"""Every option of every config group builds into the class its `_target_` names, every `_target_` in
conf/ takes the keys written beside it, and impossible values fail with a one-line message."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra._internal.utils import _locate
from omegaconf import OmegaConf

from ragsweep.identity import RUNNER_KEYS
from ragsweep.runner.build import ConfigError, build
from ragsweep.runner.overrides import home_expanded, unknown_choices, unquoted_values
from ragsweep.runner.plan import OPTIONAL_STAGES
from tests.conf_options import CONTRACT_GROUPS, options

CONF = Path(__file__).resolve().parents[1] / "conf"
GROUPS = sorted(p.name for p in CONF.iterdir() if p.is_dir() and p.name not in ("paths", "sweep", "best"))
SWEEPS = sorted(path.stem for path in (CONF.parent / "sweeps").glob("*.yaml"))
OPTIONS = [(group, path.stem) for group in GROUPS for path in sorted((CONF / group).glob("*.yaml"))]
PIPELINE_FIELDS = {"metrics": "evaluator", "tracking": "tracker", "augment": "augmenter", "compress": "compressor"}


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def _required(group: str, option: str, tmp_path) -> list[str]:
    """Values an option marks ??? (a model path, a data folder)."""
    from ragsweep.embedding.minilm import minilm_path

    return {
        ("dataset", "native"): [f"dataset.path={tmp_path}"],
        ("dataset", "beir"): [f"dataset.path={tmp_path}"],
        ("dataset", "squad"): [f"dataset.path={tmp_path}/dev.json"],
        ("dataset", "files"): [f"dataset.path={tmp_path}"],
        ("embedder", "sentence_transformers"): [f"embedder.model={minilm_path()}"],
        # loads as a CrossEncoder with an untrained head: enough to prove the option builds and preflights
        ("reranker", "cross_encoder"): [f"reranker.model={minilm_path()}"],
        ("generator", "openai"): ["generator.base_url=http://127.0.0.1:9/v1", "generator.model=any"],
        ("embedder", "openai"): ["embedder.base_url=http://127.0.0.1:9/v1", "embedder.model=any"],
        ("reranker", "endpoint"): ["reranker.base_url=http://127.0.0.1:9", "reranker.model=any"],
        # MiniLM with an untrained two-label head: no label is called entailment, so name one
        ("judge", "nli"): [f"judge.model_path={minilm_path()}", "judge.entailment_label=1"],
        # the preflight trains it for real, on 4 synthetic claims of the dataset: one step, seconds
        ("judge", "trained"): ["judge.examples=4", "judge.progress=false"],
        ("judge", "trained_mpnet"): ["judge.examples=4", "judge.answers=false", "judge.progress=false"],
        ("judge", "ensemble"): ["judge.members.trained.examples=4", "judge.members.trained.progress=false"],
        ("relevance_judge", "span_trained"): ["relevance_judge.examples=4", "relevance_judge.progress=false"],
        ("cutoff", "threshold"): ["cutoff.min_score=0.3"],
    }.get((group, option), []) + (
        ["dataset=files", f"dataset.path={tmp_path}"] if group == "parser" else []  # read by dataset=files only
    ) + (
        ["generator=extractive"] if group == "judge" else []  # judges judge answers
    ) + (["judge=lexical"] if group == "generator" else [])  # a judge, so that generators are judged too


@pytest.mark.parametrize(("group", "option"), OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_every_option_builds(group, option, tmp_path, request):
    # an endpoint option's preflight asks its endpoint; tests/generation/test_openai.py and tests/endpoints/ run them
    # against real servers
    preflight = (group, option) not in (("generator", "openai"), ("embedder", "openai"), ("reranker", "endpoint"))
    root = request.getfixturevalue("tiny_judges_root") if group in ("judge", "relevance_judge") else tmp_path
    cfg = _compose(f"{group}={option}", f"paths.root={root}", *_required(group, option, tmp_path))
    pipeline = build(cfg, preflight=preflight)
    if option == "none" and group in (*OPTIONAL_STAGES, "generator", "judge", "relevance_judge"):
        assert getattr(pipeline, PIPELINE_FIELDS.get(group, group)) is None  # no such stage at all
        return
    if group == "cache":  # settings of the runner's own StageCache, no _target_
        assert pipeline.cache.enabled == (option == "default")
        return
    built = type(_component(pipeline, group))
    assert f"{built.__module__}.{built.__qualname__}" == cfg[group]._target_


def _component(pipeline, group: str):
    """What the runner built for `group`; the embedder and the store are the (dense) retriever's, the
    embedder inside its cache wrapper."""
    if group == "embedder":
        return pipeline.retriever.component.embedder.embedder
    if group == "store":
        return pipeline.retriever.component.store
    if group == "parser":
        return pipeline.dataset.parser
    built = getattr(pipeline, PIPELINE_FIELDS.get(group, group))
    return getattr(built, "component", built)


def _targets(node, path: str = ""):
    """(dotted path, node) of every mapping holding a `_target_` in `node`, at any depth."""
    if isinstance(node, dict):
        if "_target_" in node:
            yield path, node
        for key, value in node.items():
            yield from _targets(value, f"{path}.{key}".lstrip("."))
    elif isinstance(node, list):
        for value in node:
            yield from _targets(value, path)


SHIPPED_YAMLS = sorted(yaml for yaml in (p.relative_to(CONF) for p in CONF.glob("**/*.yaml"))
                       if yaml.parts[0] not in ("sweep", "best"))  # grids (sweeps/) and a user's exports
TARGETS = [(yaml, path, node) for yaml in SHIPPED_YAMLS
           for path, node in _targets(OmegaConf.to_container(OmegaConf.load(CONF / yaml)))]


@pytest.mark.parametrize(("yaml", "path", "node"), TARGETS, ids=[f"{y}:{p or '.'}" for y, p, _ in TARGETS])
def test_every_target_is_a_class_at_that_path_taking_the_keys_beside_it(yaml, path, node):
    """`_target_` paths are part of a run's fingerprint: a class that moved must fail here, not be found
    under a re-export; a key its constructor does not take would otherwise fail only when a job builds it."""
    target = _locate(node["_target_"])
    assert isinstance(target, type), f"{node['_target_']} is not a class"
    assert f"{target.__module__}.{target.__qualname__}" == node["_target_"]
    parameters = inspect.signature(target).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    runner_keys = RUNNER_KEYS.get(yaml.parts[0], ()) if len(yaml.parts) > 1 and not path else ()
    hydra_keys = ("defaults",)  # the config groups a YAML composes, e.g. judge/llm.yaml's judge/generator
    given = {key for key in node if not key.startswith("_") and key not in (*runner_keys, *hydra_keys)}
    assert given <= set(parameters), f"{target.__name__} takes no {sorted(given - set(parameters))}"


@pytest.mark.parametrize("group", CONTRACT_GROUPS)
def test_every_contract_group_lists_options(group):
    """The contract tests parametrise over these listings; an empty one would skip them all, and pass."""
    assert options(group), f"conf/{group}/ holds no YAML: the {group} contract test would run no case"


@pytest.mark.parametrize("name", SWEEPS)
def test_every_named_grid_loads_and_each_of_its_values_builds(name, tmp_path):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        grid = compose("config", overrides=[f"+sweep={name}"], return_hydra_config=True).hydra.sweeper.params
    assert grid, f"sweeps/{name}.yaml sets no hydra.sweeper.params"
    assert {"quick", "chunking", "retrieval", "full", "optuna_retrieval"} <= set(SWEEPS)
    for axis, values in grid.items():
        values = str(values).removeprefix("choice(").removesuffix(")")
        for value in (v.strip() for v in values.split(",")):
            build(_compose(f"+sweep={name}", f"{axis}={value}", f"paths.root={tmp_path}"))


def test_defaults_match_the_contract():
    cfg = _compose()
    assert cfg.k == 5
    assert cfg.tracking.uri.startswith("sqlite:///") and cfg.tracking.uri.endswith("mlruns/mlflow.db")
    assert (cfg.metrics.unit, cfg.metrics.mode) == ("tokens", "standard")
    assert cfg.dataset._target_.endswith("SotuQADataset")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["chunker=fixed", "chunker.overlap=800"], "chunker: chunker.overlap (800) must be smaller than chunker.size (800)"),
        (["chunker=recursive", "chunker.size=0"], "chunker: chunker.size must be > 0, got 0"),
        (["k=0"], "k must be a positive integer, got 0; set e.g. k=5"),
        (["k=-2"], "k must be a positive integer, got -2"),
        (["dataset=native"], "dataset.path is required; set it on the command line, e.g. dataset.path=<value>"),
        (["metrics.mode=chroma_compat"], "metrics: metrics.mode=chroma_compat counts characters; use metrics=chroma_compat"),
        (["metrics.unit=words"], "metrics: metrics.unit must be one of ('tokens', 'chars'), got 'words'"),
        (["store.batch_size=0"], "store: store.batch_size must be > 0, got 0"),
        (["depth=0"], "depth must be a positive integer, got 0"),
        (["reranker=embedding", "reranker.candidates=3", "k=5"], "reranker.candidates (3) must be >= k (5)"),
        (["reranker=cross_encoder", "reranker.model=/no/model"], "reranker.model=/no/model cannot be loaded"),
        (["embedder=sentence_transformers"], "embedder.model is required"),
        (["optimized_metric=[token_iou]"], "optimized_metric=[token_iou]: a list names two or more metrics to trade off"),
        (["optimized_metric=[latency_ms_p95,token_iou]"], "optimized_metric=[latency_ms_p95,token_iou]: the first "
                                                          "metric ranks the sweep, and latency_ms_p95 is not one"),
        (["optimized_metric=[token_iou,claims_per_answer]"], "optimized_metric=[token_iou,claims_per_answer]: "
                                                             "claims_per_answer is not a metric this configuration logs"),
        (["optimized_metric=[token_iou,completion_tokens_mean]"], "optimized_metric=[token_iou,completion_tokens_mean]: "
                                                                  "completion_tokens_mean is not a metric this"),
    ],
)
def test_impossible_values_fail_before_work(overrides, message):
    with pytest.raises(ConfigError) as error:
        build(_compose(*overrides))
    assert str(error.value) == message or str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_unknown_options_are_named_with_the_choices():
    problems = unknown_choices(["-m", "chunker=recursive,nope", "k=5,10", "hydra/launcher=basic"], CONF)
    assert problems == [
        "chunker=nope is not an option of 'chunker'; choose one of fixed, recursive, sections, semantic, sentence (or add conf/chunker/nope.yaml)"
    ]


def test_a_home_folder_in_a_value_is_expanded_as_a_shell_would():
    """The shell leaves `~` alone after `dataset.path=`, and Hydra's grammar cannot read it: it is expanded first,
    each value of a sweep too, quoted where the expanded path needs quotes; `~key` (delete a key) is left."""
    home = str(Path.home())
    assert home_expanded(["dataset.path=~/x", "-m", "cache.dir=~/a,~/b", "~k", "+paths.data=~", "k=3"]) == [
        f"dataset.path={home}/x", "-m", f"cache.dir={home}/a,{home}/b", "~k", f"+paths.data={home}", "k=3"]
    assert home_expanded(["dataset.path=~/my (1)"]) == [f'dataset.path="{home}/my (1)"']


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        (["dataset.path=my", "docs/x", "k=3"], "docs/x is not KEY=VALUE: the shell split the value of dataset.path at "
                                                """its spaces; quote it: 'dataset.path="my docs/x"'"""),
        (["dataset.path=/data/a(1).txt"], "dataset.path=/data/a(1).txt: Hydra's grammar reads this value only in "
                                          """quotes; quote it: 'dataset.path="/data/a(1).txt"'"""),
        (["dataset.path=it's", "mine"], "mine is not KEY=VALUE: the shell split the value of dataset.path at its "
                                        """spaces; quote it: "dataset.path=\\"it's mine\\"\""""),
        (["k=[1"], None),  # not a value quotes would fix: Hydra's own error stands
    ],
)
def test_a_value_that_needs_quotes_is_shown_quoted(overrides, problem):
    assert unquoted_values(overrides) == ([f"cannot read the overrides: {problem}"] if problem else [])
