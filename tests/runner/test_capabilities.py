"""A prompt that needs what its model cannot give (JSON to a schema), or a model the install lacks (llama.cpp), is
refused before any call: when the stage is built or preflighted, by a sweep's check and by `ragsweep estimate`
alike, in one line naming the setting to change in the group that chooses that model."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from ragsweep.generation.base import Generation, Request
from ragsweep.generation.own import OwnGenerator
from ragsweep.judging.llm import LLMJudge
from ragsweep.packaged import install_command
from ragsweep.query.hyde import HydeRewriter
from ragsweep.query.multi_query import MultiQueryRewriter
from ragsweep.runner.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
FAST = ["retriever=bm25", "dataset.limit=2"]


class FreeText:
    """A model that writes free text only (no `gives`), taking any model settings; never to be called here."""

    enabled = True

    def __init__(self, **settings: object) -> None:
        self.settings = settings

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        raise AssertionError("a refused configuration made a call")


def _compose(root: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=[*FAST, *overrides, f"paths.root={root}"])


def test_a_component_whose_prompts_need_json_refuses_a_model_without_it_when_built():
    own = OwnGenerator(lambda question, passages: "free text")
    with pytest.raises(ValueError, match=r"^query.constrained=true asks its model for JSON to a schema .*which "
                                         r"OwnGenerator cannot give; choose generator=llama_cpp, transformers or "
                                         r"openai, or set query.constrained=false$"):
        MultiQueryRewriter(own)
    with pytest.raises(ValueError, match=r"^judge.constrained=true asks .* choose generator=llama_cpp"):
        LLMJudge(own)
    MultiQueryRewriter(own, constrained=False), LLMJudge(own, constrained=False), HydeRewriter(own)  # free text


@pytest.mark.parametrize(("overrides", "setting"), [
    (["query=multi_query", f"query.generator._target_={__name__}.FreeText"],
     "query/generator=llama_cpp, transformers or openai, or set query.constrained=false"),
    (["generator=extractive", "judge=llm", f"judge.generator._target_={__name__}.FreeText"],
     "judge/generator=llama_cpp, transformers or openai, or set judge.constrained=false"),
    (["relevance_judge=llm", f"relevance_judge.generator._target_={__name__}.FreeText"],
     "relevance_judge/generator=llama_cpp, transformers or openai, or set relevance_judge.constrained=false"),
])
def test_a_sweeps_check_and_the_estimate_refuse_a_model_without_json_in_one_line(overrides, setting, tmp_path):
    """`check_command_line` is what a sweep runs before Hydra starts anything, and what `ragsweep estimate` visits
    each point through: nothing is built past the refusal, so no call is made."""
    from ragsweep.runner.estimating.sweep import SweepEstimator
    from ragsweep.runner.preflight import check_command_line

    estimator = SweepEstimator()
    problems = check_command_line([*FAST, *overrides, f"paths.root={tmp_path}"], ROOT / "conf", visit=estimator.visit)
    assert len(problems) == 1 and "\n" not in problems[0] and problems[0].endswith(setting), problems
    assert "asks its model for JSON to a schema" in problems[0] and "FreeText cannot give" in problems[0]
    assert not estimator._points  # refused before the estimate priced it


@pytest.mark.parametrize(("overrides", "advice"), [
    (["query=multi_query", "query/generator=llama_cpp"],
     "or use query/generator=transformers, which needs no compiler"),
    (["query=hyde", "query/generator=llama_cpp"], "or use query/generator=transformers, which needs no compiler"),
    (["relevance_judge=llm", "relevance_judge/generator=llama_cpp"],
     "or use relevance_judge/generator=transformers, which needs no compiler"),
    (["generator=extractive", "judge=llm", "judge/generator=llama_cpp"],
     "or use judge/generator=transformers, which needs no compiler"),
    (["generator=llama_cpp"], "or use generator=transformers, which needs no compiler"),
    (["generator=extractive", "judge=likelihood"],
     "or choose another judge: judge=lexical, judge=embedding or judge=llm judge/generator=transformers"),
])
def test_without_llama_cpp_each_stage_that_runs_it_names_its_own_group_before_any_work(overrides, advice, tmp_path,
                                                                                      monkeypatch):
    """The default install (no `llama` extra) with llama.cpp chosen: the preflight that loads each model says what to
    choose instead, in the group that chooses that model."""
    from ragsweep.runner.build import build
    from ragsweep.runner.plan import plan_job

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` raises ImportError
    monkeypatch.setattr("ragsweep.generation.llama_cpp._MODELS", {})
    monkeypatch.setattr("ragsweep.judging.likelihood._MODELS", {})
    with pytest.raises(ConfigError) as refused:
        build(plan_job(_compose(tmp_path, *overrides)))
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"llama.cpp is not installed: {install_command('llama')} ")
    assert message.endswith(advice)


@pytest.mark.parametrize(("overrides", "group"), [
    (["query=multi_query"], "query"), (["query=hyde"], "query"), (["query=decompose"], "query"),
    (["generator=extractive", "judge=llm"], "judge"), (["relevance_judge=llm"], "relevance_judge"),
])
def test_the_default_model_of_each_llm_option_is_one_the_default_install_runs(overrides, group, tmp_path,
                                                                             monkeypatch):
    """Without llama.cpp, each option that asks a model for JSON builds with its default model: transformers, whose
    JSON llguidance holds (issue 72); llama_cpp is chosen with `<group>/generator=llama_cpp`."""
    from ragsweep.generation.transformers_local import TransformersGenerator
    from ragsweep.runner.build import build
    from ragsweep.runner.plan import plan_job

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` raises ImportError
    monkeypatch.setattr("ragsweep.generation.llama_cpp._MODELS", {})
    cfg = _compose(tmp_path, *overrides)
    assert cfg[group].generator._target_ == "ragsweep.generation.transformers_local.TransformersGenerator"
    built = getattr(build(plan_job(cfg), preflight=False), group).component
    assert isinstance(built.generator, TransformersGenerator)


def test_ragsweep_generate_drafts_with_transformers_by_default():
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("generate")
    assert cfg.generator._target_ == "ragsweep.generation.transformers_local.TransformersGenerator"


def test_a_nested_models_bad_setting_is_named_where_it_is_set(tmp_path):
    from ragsweep.runner.build import build
    from ragsweep.runner.plan import plan_job

    for overrides, key in ((["query=multi_query", "query.generator.max_tokens=0"], "query.generator.max_tokens"),
                           (["relevance_judge=llm", "relevance_judge.generator.n_ctx=0"],
                            "relevance_judge.generator.n_ctx")):
        with pytest.raises(ConfigError, match=rf"^{overrides[0].split('=')[0]}: {key} must be an integer >= 1"):
            build(plan_job(_compose(tmp_path, *overrides)), preflight=False)
