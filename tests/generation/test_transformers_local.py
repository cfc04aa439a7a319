"""generator=transformers: the packaged SmolLM2 GGUF answered through transformers, nothing compiled, its JSON
held to a schema by llguidance."""

from __future__ import annotations

import json
import shutil

import pytest

from ragsweep.generation.base import Request
from ragsweep.generation.transformers_local import TransformersGenerator

PASSAGE = "The quick brown fox jumps over the lazy dog."


def _request(question: str, passages: tuple[str, ...] = (PASSAGE,), **extra) -> Request:
    content = "Passages:\n" + "\n\n".join(passages) + f"\n\nQuestion: {question}\nAnswer in a few words."
    return Request(question, passages, ({"role": "user", "content": content},), **extra)


@pytest.fixture(scope="module")
def generator() -> TransformersGenerator:
    built = TransformersGenerator(max_tokens=16, n_ctx=256, threads=1)
    built.preflight()
    return built


def test_greedy_answers_repeat_and_count_their_tokens(generator):
    first, again = generator.generate([_request("What jumps over the dog?")] * 2)
    assert first.error is None and first.answer and first.answer == again.answer
    assert first.prompt_tokens > 20 and 0 < first.completion_tokens <= 16 and first.latency_ms > 0


def test_a_prompt_over_n_ctx_and_a_format_other_than_json_are_that_question_s_error(generator):
    long, grammar = generator.generate([_request("What jumps?", (PASSAGE * 40,)),
                                        _request("What jumps?", response_format={"type": "regex", "regex": "a+"})])
    assert long.answer is None and "over generator.n_ctx=256; raise generator.n_ctx or lower k" in long.error
    assert grammar.answer is None and "constrains output to JSON only" in grammar.error


@pytest.mark.slow
def test_a_json_schema_holds_the_answer_to_it_token_by_token():
    """llguidance masks every token that cannot continue the schema's JSON: SmolLM2, which answers a yes/no
    question in prose, gives the verdict object and a list of strings, then stops (JSON through transformers)."""
    generator = TransformersGenerator(max_tokens=48, n_ctx=256, threads=1)  # the fixture's model, loaded once
    verdict_schema = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["YES", "NO"]}},
                      "required": ["verdict"]}
    list_schema = {"type": "object", "properties": {"queries": {"type": "array", "items": {"type": "string"},
                                                                "minItems": 1}}, "required": ["queries"]}
    verdict, listed = generator.generate([
        _request("Does the fox jump?", response_format={"type": "json_object", "schema": verdict_schema}),
        _request("Ask this question two other ways.", response_format={"type": "json_object", "schema": list_schema})])
    assert verdict.error is None and json.loads(verdict.answer)["verdict"] in {"YES", "NO"}
    assert verdict.completion_tokens < 48  # ended when the object closed, not cut off
    assert listed.error is None and all(isinstance(item, str) for item in json.loads(listed.answer)["queries"])


@pytest.mark.slow
def test_the_llm_judge_through_transformers_gives_parseable_verdicts():
    """judge=llm judge/generator=transformers: the verdict and relevance schemas hold, so no call is re-asked."""
    from ragsweep.generation.reask import SEPARATOR
    from ragsweep.judging.base import Pair
    from ragsweep.judging.llm import LLMJudge

    judge = LLMJudge(TransformersGenerator(max_tokens=32, n_ctx=512, threads=1), retries=1)
    support, relevance = judge.judge([Pair("The fox jumps over the dog.", PASSAGE),
                                      Pair("What jumps over the dog?", PASSAGE, "relevance")])
    assert (support.status, relevance.status) == ("ok", "ok") and SEPARATOR not in support.raw + relevance.raw
    assert json.loads(support.raw)["verdict"] in {"YES", "NO"} and json.loads(relevance.raw)["answer"] in "ABC"


def test_a_missing_model_is_refused_when_built(tmp_path):
    with pytest.raises(ValueError, match=r"generator.model_path=.*nope.gguf does not exist"):
        TransformersGenerator(model_path=str(tmp_path / "nope.gguf"))


def test_without_llama_cpp_its_generator_says_how_to_get_it_before_any_work(monkeypatch):
    """An install without the `llama` extra: generator=llama_cpp's check (loading its model) names the extra and
    generator=transformers."""
    import sys

    from ragsweep.generation.llama_cpp import LlamaCppGenerator

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` raises ImportError
    monkeypatch.setattr("ragsweep.generation.llama_cpp._MODELS", {})
    with pytest.raises(ValueError, match=r"llama.cpp is not installed: .*pip install -e .*\[llama\].*"
                                         r"or use generator=transformers, which needs no compiler"):
        LlamaCppGenerator(n_ctx=512).preflight()


def test_a_gguf_file_is_converted_once_kept_whole_and_answers_as_the_file_does(tmp_path, monkeypatch, caplog):
    """The folder kept for a GGUF file holds what transformers read from the file: the same weights, the same chat
    prompt's tokens, the same greedy answer; where no folder can be kept, the file itself is read (a warning)."""
    import torch
    import transformers

    from ragsweep.generation.llama_cpp import packaged_model
    from ragsweep.generation.transformers_local import CONVERTED_ENV, _load

    gguf = packaged_model()
    monkeypatch.setenv(CONVERTED_ENV, str(tmp_path / "kept"))
    tokenizer, model = _load(gguf)
    kept_folders = list((tmp_path / "kept").iterdir())  # one, nothing half-written beside it
    assert len(kept_folders) == 1 and kept_folders[0].name.endswith(f"-transformers-{transformers.__version__}")
    (tmp_path / "a file").write_text("")
    monkeypatch.setenv(CONVERTED_ENV, str(tmp_path / "a file" / "kept"))
    read_tokenizer, read_model = _load(gguf)
    assert "reading the file each time" in caplog.text
    assert not hasattr(model.config, "quantization_config") and hasattr(read_model.config, "quantization_config")
    kept, read = model.state_dict(), read_model.state_dict()
    assert kept.keys() == read.keys() and all(torch.equal(kept[name], read[name]) for name in kept)
    messages = [{"role": "user", "content": f"Passages:\n{PASSAGE}\n\nQuestion: What jumps?"}]
    ids = [t.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
           ["input_ids"] for t in (tokenizer, read_tokenizer)]
    assert torch.equal(*ids)
    with torch.inference_mode():
        answers = [m.generate(ids[0], attention_mask=torch.ones_like(ids[0]), max_new_tokens=12, do_sample=False)
                   for m in (model, read_model)]
    assert torch.equal(*answers)
    shutil.rmtree(tmp_path / "kept")  # 517 MB: not left for pytest's last three runs to keep
