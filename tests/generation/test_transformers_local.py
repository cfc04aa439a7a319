"""generator=transformers: the packaged SmolLM2 GGUF answered through transformers, nothing compiled."""

from __future__ import annotations

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


def test_a_prompt_over_n_ctx_and_a_json_format_are_that_question_s_error(generator):
    long, constrained = generator.generate([_request("What jumps?", (PASSAGE * 40,)),
                                            _request("What jumps?", response_format={"type": "json_object"})])
    assert long.answer is None and "over generator.n_ctx=256; raise generator.n_ctx or lower k" in long.error
    assert constrained.answer is None and "use generator=llama_cpp" in constrained.error


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
    with pytest.raises(ValueError, match=r"llama.cpp is not installed: pip install 'ragsweep\[llama\]'.*"
                                         r"or use generator=transformers, which needs no compiler"):
        LlamaCppGenerator(n_ctx=512).preflight()
