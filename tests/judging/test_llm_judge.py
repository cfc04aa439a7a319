"""The llm judge with the real SmolLM2 model in process: constrained JSON verdicts, re-asks, failures
as verdicts. (SmolLM2-135M judges at chance; these tests check the mechanics, not its accuracy.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsweep.generation.llama_cpp import LlamaCppGenerator
from ragsweep.generation.none import NoGenerator
from ragsweep.generation.reask import SEPARATOR
from ragsweep.judging.base import Pair
from ragsweep.judging.llm import LLMJudge

pytestmark = [pytest.mark.slow, pytest.mark.llama_cpp]
PASSAGE = "The Harbour Bridge was opened in 1932 by the mayor. It carries eight lanes of traffic."
PAIRS = [Pair("The bridge was opened in 1932.", PASSAGE), Pair("The bridge was opened in 1950.", PASSAGE),
         Pair("When was the Harbour Bridge opened?", PASSAGE, "relevance")]


@pytest.fixture(scope="module")
def judge() -> LLMJudge:
    built = LLMJudge(LlamaCppGenerator(max_tokens=32), retries=1)
    built.preflight()
    return built


def test_constrained_verdicts_are_json_and_parse(judge):
    verdicts = judge.judge(PAIRS)
    assert [v.status for v in verdicts] == ["ok", "ok", "ok"]
    for verdict, key, values in zip(verdicts, ("verdict", "verdict", "answer"), ({"YES", "NO"},) * 2 + ({"A", "B", "C"},)):
        assert SEPARATOR not in verdict.raw  # parsed on the first call: no re-ask
        assert json.loads(verdict.raw)[key] in values  # the grammar held: the raw output is the schema's JSON
    assert {v.score for v in verdicts[:2]} <= {0.0, 1.0} and verdicts[2].score in {0.0, 0.5, 1.0}


def test_json_cut_off_by_max_tokens_is_re_asked_then_parse_failed():
    judge = LLMJudge(LlamaCppGenerator(max_tokens=3), retries=1)  # '{"verdict' is all 3 tokens hold
    [verdict] = judge.judge(PAIRS[:1])
    assert verdict.status == "parse_failed" and verdict.score is None
    first, second = verdict.raw.split(SEPARATOR)  # both calls' outputs kept
    assert first.startswith("{") and "truncated" in verdict.raw
    assert verdict.completion_tokens == 6 and verdict.prompt_tokens > 0 and verdict.latency_ms > 0  # both calls paid


def test_a_call_the_generator_cannot_make_is_an_error_verdict():
    judge = LLMJudge(LlamaCppGenerator(n_ctx=64, max_tokens=8), retries=2)
    verdicts = judge.judge([Pair("The bridge was opened in 1932.", PASSAGE * 8), PAIRS[0]])
    assert verdicts[0].status == "error" and verdicts[0].score is None
    assert "exceed context window" in verdicts[0].raw and SEPARATOR not in verdicts[0].raw  # errors are not re-asked


def test_free_text_verdicts_are_parsed_without_constraints():
    judge = LLMJudge(LlamaCppGenerator(max_tokens=24), constrained=False, retries=0)
    [verdict] = judge.judge(PAIRS[:1])
    assert not verdict.raw.lstrip().startswith("{")  # SmolLM2 answers in prose when unconstrained
    assert verdict.status == "ok" and verdict.score in {0.0, 1.0}


def test_decompose_and_questions_give_distinct_strings(judge):
    claims = judge.decompose("When was the bridge opened?", "The bridge was opened in 1932 and carries eight lanes.")
    questions = judge.questions_for("The bridge was opened in 1932 by the mayor.", n=2)
    for listed in (claims, questions):
        items = listed.items
        assert items and all(isinstance(item, str) and item for item in items)
        assert len(set(items)) == len(items)
        assert listed.prompt_tokens > 0 and listed.completion_tokens > 0 and listed.latency_ms > 0  # what it cost
    assert len(questions.items) <= 2
    assert judge.generator.max_tokens == 32  # the longer budget for lists did not leak into verdicts


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"threshold": 1.5}, "judge.threshold"),
    ({"retries": -1}, "judge.retries"),
    ({"batch_size": 0}, "judge.batch_size"),
    ({"prompts": {"suport": "support"}}, "judge.prompts has no task 'suport'"),
    ({"prompts": {"support": "nonexistent"}}, "judge.prompts.support=nonexistent"),
])
def test_bad_settings_fail_when_built(kwargs, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("[", r"\[")):
        LLMJudge(LlamaCppGenerator(), **kwargs)


def test_a_generator_that_does_not_generate_is_refused():
    with pytest.raises(ValueError, match="judge.generator must be an LLM generator"):
        LLMJudge(NoGenerator())


def test_a_users_prompt_file_is_checked_and_used(tmp_path: Path):
    missing = tmp_path / "missing.yaml"
    missing.write_text("system: Judge.\nuser: 'Claim: {claim}'\n")
    with pytest.raises(ValueError, match=r"must contain \{passage\}"):
        LLMJudge(LlamaCppGenerator(), prompts={"support": str(missing)})
    unquoted = tmp_path / "unquoted.yaml"  # a colon inside an unquoted value: a YAML error, named as the key's
    unquoted.write_text('system: Reply {"verdict": "YES"}.\nuser: "{passage} {claim}"\n')
    with pytest.raises(ValueError, match=r"judge\.prompts\.support=.*unquoted\.yaml: not valid YAML"):
        LLMJudge(LlamaCppGenerator(), prompts={"support": str(unquoted)})
    good = tmp_path / "mine.yaml"
    good.write_text('system: \'Reply {"verdict": "YES"} or {"verdict": "NO"}.\'\nuser: "P: {passage}\\nC: {claim}"\n')
    judge = LLMJudge(LlamaCppGenerator(), prompts={"support": str(good)})
    assert judge.prompts["support"].render(passage="p", claim="c")[1]["content"] == "P: p\nC: c"
    assert judge.prompts["relevance"].name == "relevance"  # the other tasks keep the shipped prompts


def test_the_config_builds_the_judge_and_its_generator():
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    conf = Path(__file__).resolve().parents[2] / "conf" / "judge"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose(config_name="llm")
    assert cfg.max_failure_rate == 0.05 and cfg.threshold == 0.5 and cfg.decompose is False
    from ragsweep.identity import RUNNER_KEYS

    from ragsweep.generation.transformers_local import TransformersGenerator

    judge = instantiate(OmegaConf.masked_copy(cfg, [key for key in cfg if key not in RUNNER_KEYS["judge"]]))
    # its default model is one the default install runs (issue 72); llama_cpp is judge/generator=llama_cpp
    assert isinstance(judge.generator, TransformersGenerator) and judge.generator.max_tokens == 32
    assert judge.decompose_claims is False and judge.retries == 1
