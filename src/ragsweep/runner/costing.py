"""What each question of a job cost in money (`prices`): its rewrite, its search, its answer and its judges' calls;
and what embedding its passages at an endpoint cost (`passages_cost`), which its `cost_total` adds.

Every call counts as it was made, cached or not (a cached answer keeps the tokens and milliseconds it took), so
a configuration's cost is what running it costs, the same in every run of it; a failed call counts too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ragsweep.generation.base import Generation
from ragsweep.judging.base import Listed, Verdict
from ragsweep.metrics.costs import Call, cost_per_question
from ragsweep.query.base import Rewrite
from ragsweep.runner.build import Pipeline
from ragsweep.runner.judge_stage import Judgement
from ragsweep.types import Chunk, Hit

log = logging.getLogger(__name__)


def priced_as(component: Any) -> tuple[str | None, bool]:
    """The model a stage's calls are priced by and whether it is an endpoint: the component's own `model_name` and
    `remote` (a generator's), or those of the generator it asks (a rewriter's, an LLM judge's)."""
    model = getattr(component, "generator", component)
    return getattr(model, "model_name", None), bool(getattr(model, "remote", False))


def endpoint_model(searcher: Any) -> str | None:
    """The model an embedder or reranker reaches at an endpoint (its `model_name` when `remote`); None for one that
    runs here, priced by its time."""
    return getattr(searcher, "model_name", None) if getattr(searcher, "remote", False) else None


def search_calls(pipeline: Pipeline, searched: Sequence[Sequence[str]], chunks: Sequence[Chunk],
                 first: Sequence[Sequence[Hit]], count_tokens: Callable[[str], int]) -> list[list[Call]]:
    """Per question, its calls to endpoints while it is searched: the texts it is searched with embedded (the
    question, or its rewrites), and the reranker reading the question beside each of its candidates."""
    embedder = endpoint_model(pipeline.embedder.component) if pipeline.embedder else None
    reranker = endpoint_model(pipeline.reranker.component)
    candidates = getattr(pipeline.reranker.component, "candidates", 0)
    calls: list[list[Call]] = [[] for _ in searched]
    for question, texts, hits in zip(calls, searched, first, strict=True):
        if embedder is not None:
            question.append(Call(embedder, True, sum(count_tokens(text) for text in texts)))
        if reranker is not None:
            read = hits[:candidates]
            question.append(Call(reranker, True, len(read) * count_tokens(texts[0])
                                 + sum(count_tokens(chunks[hit.index].search_text) for hit in read)))
    return calls


def passages_cost(pipeline: Pipeline, passages: Sequence[str], count_tokens: Callable[[str], int]) -> float:
    """What embedding `passages` at a priced endpoint costs: input price x their tokens / 10^6 (0, without counting
    them, for an embedder that runs here or whose model has no price)."""
    model = endpoint_model(pipeline.embedder.component) if pipeline.embedder else None
    if model is None or model not in pipeline.prices.models:
        return 0.0
    return pipeline.prices.of(Call(model, True, sum(count_tokens(text) for text in passages)))


def question_costs(pipeline: Pipeline, count: int, samples: Mapping[str, np.ndarray],
                   rewrites: Sequence[Rewrite] | None, generations: Sequence[Generation] | None,
                   judgements: Sequence[Judgement] | None,
                   relevance: Sequence[Sequence[Verdict]] | None,
                   searched: Sequence[Sequence[Call]] | None = None) -> list[float]:
    """Each of the `count` questions' cost: embedding and searching it (the timed questions' mean search and
    rerank seconds, as every question's, and its calls to endpoints while searched, `search_calls`), rewriting it,
    answering it, and judging its answer and passages."""
    calls: list[list[Call]] = [[Call(None, False, seconds=_mean_seconds(samples, "search_ms", "rerank_ms")),
                                *(searched[position] if searched is not None else ())]
                               for position in range(count)]
    if rewrites is not None:
        model, remote = priced_as(pipeline.query.component)
        for question, made in zip(calls, rewrites, strict=True):
            question.append(Call(model, remote, made.prompt_tokens, made.completion_tokens, made.latency_ms / 1000))
    if generations is not None:
        model, remote = priced_as(pipeline.generator.component)
        for question, answer in zip(calls, generations, strict=True):
            question.append(Call(model, remote, answer.prompt_tokens, answer.completion_tokens,
                                 answer.latency_ms / 1000))
    if judgements is not None:
        _add_verdicts(calls, priced_as(pipeline.judge.component), [made.spent() for made in judgements])
    if relevance is not None:
        _add_verdicts(calls, priced_as(pipeline.relevance_judge.component), relevance)
    unpriced = pipeline.prices.unpriced([call for question in calls for call in question])
    if unpriced:
        log.warning("prices.models has no price for %s: its tokens count 0 in cost_per_question; add e.g. "
                    "prices.models.%s={input: 2.5, output: 10}", ", ".join(unpriced), unpriced[0])
    return cost_per_question(calls, pipeline.prices)


def _add_verdicts(calls: list[list[Call]], model: tuple[str | None, bool],
                  verdicts: Sequence[Sequence[Verdict | Listed]]) -> None:
    for question, made in zip(calls, verdicts, strict=True):
        question += [Call(*model, v.prompt_tokens, v.completion_tokens, v.latency_ms / 1000) for v in made]


def _mean_seconds(samples: Mapping[str, np.ndarray], *names: str) -> float:
    return sum(float(np.mean(samples[name])) / 1000 for name in names if len(samples.get(name, ())))
