"""A job's scores: each question's span, answer and judged metrics, and its stages' latency percentiles."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragsweep.generation.base import Generation
from ragsweep.judging.base import Verdict
from ragsweep.metrics import judged
from ragsweep.metrics.costs import end_to_end_ms, percentile_summaries, percentiles
from ragsweep.metrics.relevance import context_relevance
from ragsweep.runner.build import Pipeline
from ragsweep.runner.context import Context
from ragsweep.runner.judge_stage import Judgement, judged_scores
from ragsweep.runner.stages import latency_sample
from ragsweep.types import Chunk, Dataset


def score_questions(pipeline: Pipeline, dataset: Dataset, chunks: Sequence[Chunk], context: Context,
                    generations: Sequence[Generation] | None,
                    judgements: Sequence[Judgement] | None, labels: Sequence[Sequence[int | None]],
                    relevance: Sequence[Sequence[Verdict]] | None) -> tuple[list[dict], list[dict] | None]:
    """Per question: span metrics (chunk and ranking metrics of the hits the cut-off kept, token metrics of the
    passages passed on) and context_relevance from the passages' span labels (with a relevance judge, its
    context_relevance_judged too); with a generator its answer metrics (where it has an answer and
    reference answers); with a judge its judged metrics, and each question's claims and diagnostics."""
    per_query = pipeline.evaluator.score(dataset, chunks, context.kept, pipeline.plan.k, context.spans())
    if pipeline.plan.whole_retriever:  # chunks are only what it returned, not its whole chunking
        per_query = [{name: value for name, value in scores.items() if pipeline.plan.logs(name)}
                     for scores in per_query]
    for position, scores in enumerate(per_query):
        found = {"context_relevance": context_relevance(labels[position]),
                 "context_relevance_judged": judged.context_relevance([v.score for v in relevance[position]])
                 if relevance is not None else None}
        scores.update({name: float(value) for name, value in found.items() if value is not None})
    if generations is None:
        return per_query, None
    answers = pipeline.evaluator.score_answers([made.answer for made in generations],
                                               [query.answers for query in dataset.queries])
    per_query = [{**spans, **scores} for spans, scores in zip(per_query, answers, strict=True)]
    if judgements is None:
        return per_query, None
    judge, cites = pipeline.judge.component, pipeline.prompt.cites
    diagnostics = []
    for scores, query, made, judgement, passages, query_hits in zip(per_query, dataset.queries, generations,
                                                                    judgements, labels, context.hits, strict=True):
        found, diagnosis = judged_scores(judgement, query.text, made.answer, judge.threshold,
                                         pipeline.triad_weights, cites, passages)
        scores.update(found)
        diagnostics.append({"claims": [{"text": claim.text, "citations": list(claim.citations),
                                        "support": [v.score for v in row], "status": [v.status for v in row]}
                                       for claim, row in zip(judgement.claims, judgement.support, strict=True)],
                            "passages": [context.chunks[hit.index].text for hit in query_hits]
                            if judgement.claims else [],
                            "diagnostics": diagnosis})
    return per_query, diagnostics


def latency_samples(search_ms: np.ndarray, rerank_ms: np.ndarray, generations: Sequence[Generation] | None = None,
                    timed: Sequence[int] | None = None) -> dict[str, np.ndarray]:
    """Milliseconds per question of search, rerank, generation and end to end: what `latency_metrics` takes
    percentiles of, kept in latency.json so that `gate` can compare two runs' percentiles by a bootstrap.

    Search and rerank are timed one question at a time on the latency sample, after a warm-up call,
    when the stage ran (kept with its cached results); generation on every answered question, when
    it was generated. End to end adds the three for each question of the latency sample.
    """
    samples = {"search_ms": search_ms, "rerank_ms": rerank_ms}
    generation_ms = None
    if generations is not None:
        samples["generation_ms"] = np.array([made.latency_ms for made in generations if made.error is None])
        sampled = [generations[i] for i in (latency_sample(len(generations)) if timed is None else timed)]
        generation_ms = np.array([np.nan if made.error else made.latency_ms for made in sampled])
    samples["latency_ms"] = end_to_end_ms(search_ms, rerank_ms, generation_ms)
    return samples


def latency_metrics(samples: dict[str, np.ndarray], summaries: bool = False) -> dict:
    """p50 and p95 of each of `latency_samples` (`latency_ms_p95`, ...); with `summaries`, each as metrics.json
    holds it (value, questions, bootstrap CI)."""
    measure = percentile_summaries if summaries else percentiles
    return {name: value for timing, milliseconds in samples.items() for name, value in measure(timing, milliseconds).items()}
