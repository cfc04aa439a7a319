"""The openai generator against a real OpenAI-compatible server: llama-cpp-python's, on 127.0.0.1."""

from __future__ import annotations

import pytest

from ragsweep.generation.base import Request
from ragsweep.generation.llama_cpp import LlamaCppGenerator
from ragsweep.generation.openai import OpenAIGenerator
from ragsweep.generation.prompts import load_prompt

pytestmark = [pytest.mark.slow, pytest.mark.llama_cpp]
PASSAGES = ("The Harbour Bridge was opened in 1932 by the mayor. It carries eight lanes of traffic.",)
QUESTIONS = ("When was the Harbour Bridge opened?", "How many lanes does the bridge carry?")


def _requests():
    prompt = load_prompt("qa")
    return [Request(question, PASSAGES, prompt.render(question, PASSAGES)) for question in QUESTIONS]


def test_answers_from_the_server_match_the_same_model_in_process_and_a_server_gone_gives_errors(llama_server):
    from ragsweep.generation import openai as module

    server = llama_server()
    generator = OpenAIGenerator(server.base_url, "smollm2", max_tokens=32, concurrency=2, max_retries=0, timeout=10)
    generator.preflight()
    made = generator.generate(_requests())
    assert all(m.error is None and m.answer and m.prompt_tokens > 0 and m.completion_tokens > 0 for m in made)
    assert "1932" in made[0].answer
    local = LlamaCppGenerator(max_tokens=32).generate(_requests())
    # both greedy, same weights, same chat template: the endpoint path adds nothing to the answer
    assert [m.answer for m in made] == [m.answer for m in local]
    assert [m.prompt_tokens for m in made] == [m.prompt_tokens for m in local]

    server.stop()  # gone: each call is an error, not an exception...
    made = generator.generate(_requests())
    assert all(m.answer is None and "APIConnectionError" in m.error for m in made)
    module._ANSWERING.discard(server.base_url)  # ...and preflight, asked afresh, names the URL
    with pytest.raises(ValueError, match=f"generator.base_url={server.base_url} does not answer"):
        OpenAIGenerator(server.base_url, "smollm2").preflight()


def test_a_missing_api_key_variable_fails_when_built(monkeypatch):
    monkeypatch.delenv("RAGSWEEP_TEST_KEY", raising=False)
    with pytest.raises(ValueError, match="generator.api_key_env=RAGSWEEP_TEST_KEY names an environment variable"):
        OpenAIGenerator("http://127.0.0.1:9/v1", "m", api_key_env="RAGSWEEP_TEST_KEY")
