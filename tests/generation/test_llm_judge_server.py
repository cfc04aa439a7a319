"""The llm judge through the openai backend against a real llama.cpp server: the JSON schema reaches
the server's grammar, and a server that is gone gives error verdicts, not an exception."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsweep.generation.openai import OpenAIGenerator
from ragsweep.judging.base import Pair
from ragsweep.judging.llm import LLMJudge
from ragsweep.runner.standalone_judges import build_judge

pytestmark = [pytest.mark.slow, pytest.mark.llama_cpp]
PASSAGE = "The Harbour Bridge was opened in 1932 by the mayor. It carries eight lanes of traffic."
CONF = Path(__file__).resolve().parents[2] / "conf"
PAIRS = [Pair("The bridge was opened in 1950.", PASSAGE), Pair("When was the Harbour Bridge opened?", PASSAGE, "relevance")]


def test_verdicts_from_a_server_then_errors_when_it_is_gone(llama_server):
    server = llama_server()
    judge = LLMJudge(OpenAIGenerator(server.base_url, "smollm2", max_tokens=32, max_retries=0, timeout=30))
    judge.preflight()
    verdicts = judge.judge(PAIRS)
    assert [v.status for v in verdicts] == ["ok", "ok"]
    assert json.loads(verdicts[0].raw)["verdict"] in {"YES", "NO"}  # constrained by the schema sent
    assert json.loads(verdicts[1].raw)["answer"] in {"A", "B", "C"}
    assert verdicts[0].score in {0.0, 1.0} and verdicts[1].score in {0.0, 0.5, 1.0}
    assert server.answered(settle=5) == 2  # one call per pair: nothing was re-asked

    server.stop()
    gone = judge.judge(PAIRS)
    assert [v.status for v in gone] == ["error", "error"]
    assert all(v.score is None and "APIConnectionError" in v.raw for v in gone)
    assert judge.decompose("When was it opened?", "In 1932.").items is None  # the runner falls back to sentences


def test_an_endpoint_judge_is_the_judge_generator_group_set_to_openai(llama_server, tmp_path):
    """`judge=llm judge/generator=openai judge.generator.base_url=... judge.generator.model=...`, as a sweep takes it."""
    server = llama_server()
    judge, resolved = build_judge(CONF, "llm", ["judge/generator=openai", f"judge.generator.base_url={server.base_url}",
                                               "judge.generator.model=smollm2"], root=tmp_path)
    assert isinstance(judge.generator, OpenAIGenerator) and judge.generator.max_tokens == 32
    assert resolved["generator"]["base_url"] == server.base_url
    verdicts = judge.judge(PAIRS[:1])
    assert [v.status for v in verdicts] == ["ok"] and json.loads(verdicts[0].raw)["verdict"] in {"YES", "NO"}
    assert server.answered(settle=5) == 1
