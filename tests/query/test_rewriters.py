"""The query rewriters with the real SmolLM2 model in process: lists of rewordings and sub-questions, a HyDE passage,
and every failure falling back to the question with its reason. (SmolLM2-135M rewrites poorly; these tests check
the mechanics, not the rewrites' quality.)"""

from __future__ import annotations

import pytest

from ragsweep.generation.llama_cpp import LlamaCppGenerator
from ragsweep.generation.none import NoGenerator
from ragsweep.query.decompose import DecomposeRewriter
from ragsweep.query.hyde import HydeRewriter
from ragsweep.query.multi_query import MultiQueryRewriter
from ragsweep.query.none import NoRewriter
from tests.conf_options import compose_option, instantiate_group, options

pytestmark = [pytest.mark.slow, pytest.mark.llama_cpp]
QUESTIONS = ["When was the Harbour Bridge opened, and who opened it?", "How many lanes does the bridge carry?"]


@pytest.fixture(scope="module")
def model() -> LlamaCppGenerator:
    built = LlamaCppGenerator(max_tokens=128)
    built.preflight()
    return built


@pytest.mark.parametrize("make", [lambda m: MultiQueryRewriter(m, n=2), lambda m: DecomposeRewriter(m, max_questions=2)])
def test_a_list_rewriter_searches_with_the_question_and_at_most_n_more_distinct_texts(make, model):
    rewrites = make(model).rewrite(QUESTIONS)
    assert [rewrite.error for rewrite in rewrites] == [None, None]
    for question, rewrite in zip(QUESTIONS, rewrites, strict=True):
        assert rewrite.texts[0] == question and 2 <= len(rewrite.texts) <= 3
        assert len(set(rewrite.texts)) == len(rewrite.texts)
        assert rewrite.prompt_tokens > 0 and rewrite.completion_tokens > 0
    without = make(model)
    without.include_question = False
    assert all(QUESTIONS[0] != text for text in without.rewrite(QUESTIONS[:1])[0].texts)


def test_hyde_searches_with_a_passage_in_place_of_or_beside_the_question(model):
    (replaced,) = HydeRewriter(model).rewrite(QUESTIONS[:1])
    (beside,) = HydeRewriter(model, mode="beside").rewrite(QUESTIONS[:1])
    assert replaced.error is None and len(replaced.texts) == 1 and replaced.texts[0] != QUESTIONS[0]
    assert beside.texts == (QUESTIONS[0], replaced.texts[0])  # greedy: the same passage


def test_a_rewrite_that_fails_or_cannot_be_read_is_the_question_with_its_reason():
    cut = MultiQueryRewriter(LlamaCppGenerator(max_tokens=3), retries=1).rewrite(QUESTIONS[:1])[0]
    assert cut.texts == (QUESTIONS[0],) and "no usable rewrite" in cut.error
    failed = HydeRewriter(LlamaCppGenerator(n_ctx=64, max_tokens=8)).rewrite([QUESTIONS[0] * 8])[0]
    assert failed.texts == (QUESTIONS[0] * 8,) and "raise generator.n_ctx" in failed.error  # too long for its n_ctx
    assert NoRewriter().rewrite(QUESTIONS)[1].texts == (QUESTIONS[1],) and NoRewriter.enabled is False


@pytest.mark.parametrize(("make", "message"), [
    (lambda: MultiQueryRewriter(LlamaCppGenerator(), n=0), "query.n must be an integer >= 1"),
    (lambda: DecomposeRewriter(LlamaCppGenerator(), retries=-1), "query.retries must be an integer >= 0"),
    (lambda: HydeRewriter(LlamaCppGenerator(), mode="instead"), "query.mode must be one of replace, beside"),
    (lambda: HydeRewriter(LlamaCppGenerator(), prompt="nonexistent"), "query.prompt=nonexistent"),
    (lambda: MultiQueryRewriter(NoGenerator()), "query.generator must be an LLM generator"),
])
def test_bad_settings_fail_when_built(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("option", options("query"))
def test_every_shipped_rewriter_gives_each_question_texts_to_search(option):
    runner_keys = ["~query.max_failure_rate"] if option != "none" else []  # the runner's, not the rewriter's
    rewriter = instantiate_group(compose_option("query", option, *runner_keys), "query")
    rewrites = rewriter.rewrite(QUESTIONS)
    assert len(rewrites) == len(QUESTIONS)
    for question, rewrite in zip(QUESTIONS, rewrites, strict=True):
        assert rewrite.texts and all(any(c.isalnum() for c in text) for text in rewrite.texts)
        assert rewrite.error is None or rewrite.texts == (question,)
