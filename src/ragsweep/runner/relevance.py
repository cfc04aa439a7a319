"""The relevance stage of one job: retrieved passages → span labels, and with a relevance judge its verdicts
(cached) → judged relevance, measured against the span labels.

Every (question, passage) pair is one call of the relevance judge (`runner.verdicts`). Failed calls are kept
with their status and raw output, left out of every mean, and counted in `relevance_judge_failure_rate`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ragsweep.judging.base import VALIDATED_AUC, Pair, Verdict
from ragsweep.judging.in_context import in_context
from ragsweep.metrics import judged
from ragsweep.metrics.corrected import corrected_mean, error_rates
from ragsweep.metrics.relevance import relevance_auc, span_relevance
from ragsweep.runner.build import Pipeline
from ragsweep.runner.failures import JudgingFailed, write_calls
from ragsweep.runner.verdicts import cached_verdicts
from ragsweep.types import Chunk, Hit, Query

log = logging.getLogger(__name__)


def span_labels(queries: Sequence[Query], chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]],
                k: int) -> list[list[int | None]]:
    """Each question's top-k passages labelled from its reference spans (`metrics.relevance.span_relevance`)."""
    return [[span_relevance(chunks[hit.index], query.references) for hit in query_hits[:k]]
            for query, query_hits in zip(queries, hits, strict=True)]


def judge_relevance(pipeline: Pipeline, questions: Sequence[str], chunks: Sequence[Chunk],
                    hits: Sequence[Sequence[Hit]]) -> list[list[Verdict]] | None:
    """The relevance judge's verdict on each question's top-k passages, in rank order (None without one), each
    pair judged alone (and cached), then scored beside the question's other passages (`context_weight`)."""
    if pipeline.relevance_judge is None:
        return None
    pairs, counts = relevance_pairs(pipeline, questions, chunks, hits)
    verdicts = iter(cached_verdicts(pipeline.relevance_judge, pipeline.cache, pairs))
    return [beside_each_other([next(verdicts) for _ in range(count)], pipeline.relevance_context_weight)
            for count in counts]


def relevance_pairs(pipeline: Pipeline, questions: Sequence[str], chunks: Sequence[Chunk],
                    hits: Sequence[Sequence[Hit]]) -> tuple[list[Pair], list[int]]:
    """Every (question, passage) pair of the questions' top-k passages, in rank order, and each question's count."""
    passages = [[chunks[hit.index].text for hit in query_hits[: pipeline.plan.k]] for query_hits in hits]
    pairs = [Pair(question, text, "relevance") for question, texts in zip(questions, passages, strict=True)
             for text in texts]
    return pairs, [len(texts) for texts in passages]


def beside_each_other(verdicts: Sequence[Verdict], weight: float) -> list[Verdict]:
    """One question's verdicts with each score moved by its margin over the others' (`judging.in_context`)."""
    scores = in_context([verdict.score for verdict in verdicts], weight)
    return [replace(verdict, score=score) if verdict.ok else verdict
            for verdict, score in zip(verdicts, scores, strict=True)]


def relevance_summary(labels: Sequence[Sequence[int | None]],
                      verdicts: Sequence[Sequence[Verdict]]) -> dict[str, dict]:
    """The relevance judge's agreement with the span labels over the run's labelled pairs
    (`context_relevance_auc`: value, n, positives) and its failed calls / calls."""
    flat = [(verdict, label) for row, judged_row in zip(labels, verdicts, strict=True)
            for label, verdict in zip(row, judged_row, strict=True)]
    summary = {"relevance_judge_failure_rate": {
        "value": judged.failure_rate(sum(not v.ok for v, _ in flat), len(flat)) or 0.0, "n": len(flat)}}
    auc = relevance_auc([v.score for v, _ in flat], [label for _, label in flat])
    if auc is not None:
        summary["context_relevance_auc"] = auc
    summary.update(corrected_relevance(flat, verdicts))
    return summary


def corrected_relevance(flat: Sequence[tuple[Verdict, int | None]],
                        verdicts: Sequence[Sequence[Verdict]]) -> dict[str, dict]:
    """`context_relevance_corrected`: the judged relevance corrected by the span labels as people's labels
    correct support (`metrics.corrected`), the labelled passages measuring the judge's error; what it adds
    over the span labels' own `context_relevance` is the questions without spans. {} when it cannot be."""
    labelled = [(v.score, label) for v, label in flat if v.ok and label is not None]
    per_question = [judged.context_relevance([v.score for v in row]) for row in verdicts]
    try:
        rates = error_rates([score for score, _ in labelled], [label for _, label in labelled])
        estimate = corrected_mean([value for value in per_question if value is not None], rates)
    except ValueError as error:
        log.info("no context_relevance_corrected: %s", error)
        return {}
    return {"context_relevance_corrected": {**estimate.to_dict(), "error_rates": rates.to_dict()}}


def warn_unvalidated_relevance(summary: dict) -> None:
    """Warn when the run cannot show that its relevance judge agrees with the span labels."""
    auc = summary.get("context_relevance_auc")
    if auc is None:
        log.warning("context_relevance_judged is unvalidated: the run's passages hold no pair of both span labels "
                    "to measure the relevance judge against")
    elif auc["value"] < VALIDATED_AUC:
        log.warning("context_relevance_judged is unvalidated: the relevance judge's AUC against the span labels is "
                    "%.3f (n=%d), below %.1f", auc["value"], auc["n"], VALIDATED_AUC)


def relevance_records(labels: Sequence[Sequence[int | None]],
                      relevance: Sequence[Sequence[Verdict]] | None) -> list[dict]:
    """Per question, its passages' span labels and, with a relevance judge, its scores (None: a failed call)."""
    if relevance is None:
        return [{"labels": list(row)} for row in labels]
    return [{"labels": list(row), "scores": [v.score for v in judged_row]}
            for row, judged_row in zip(labels, relevance, strict=True)]


def write_failed_relevance(output_dir: Path, query_ids: Sequence[str],
                           verdicts: Sequence[Sequence[Verdict]]) -> list[Path]:
    """`relevance_failures.jsonl`, one line per failed relevance call with what the judge said (none: no file)."""
    failed = [{"id": query_id, "task": "relevance", "passage": p + 1, "status": v.status, "raw": v.raw}
              for query_id, row in zip(query_ids, verdicts, strict=True) for p, v in enumerate(row) if not v.ok]
    return write_calls(output_dir / "relevance_failures.jsonl", failed, "relevance judge")


def fail_on_relevance_failures(summary: dict, max_failure_rate: float) -> None:
    """Raise `JudgingFailed` when more relevance calls failed than `relevance_judge.max_failure_rate`
    allows."""
    rate = summary["relevance_judge_failure_rate"]["value"]
    if rate > max_failure_rate:
        raise JudgingFailed(f"{rate:.1%} of relevance judge calls failed, more than relevance_judge.max_failure_rate="
                            f"{max_failure_rate} allows; the failed calls are in relevance_failures.jsonl")
