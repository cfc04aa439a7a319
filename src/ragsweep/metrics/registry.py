"""Every metric a job logs, declared once: which way is better, its bounds, its stage, per question or per run,
which summary table shows it by default; and the names a job logs beside them (`declares`).

Ranking (`best`, `report`, a sweep's summary), `gate`, `diff` and the summary tables read their direction,
kind and columns from here, so "lower is better for latency", "a micro average has no per-question values" or
"a sweep's table shows token_iou" is decided in one place rather than in a list per module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ragsweep.metrics.answers import ANSWER_METRICS
from ragsweep.metrics.chunk import CHUNK_METRICS
from ragsweep.metrics.judged import BANDS, JUDGED_METRICS
from ragsweep.metrics.ranking import RANKING_METRICS
from ragsweep.metrics.relevance import RELEVANCE_JUDGED, RELEVANCE_METRICS
from ragsweep.metrics.token import TOKEN_METRICS

Stage = Literal["retrieval", "relevance", "answer", "judged", "latency", "cost"]
Direction = Literal["maximize", "minimize", "none"]
# The summary tables' column groups: retrieval always; generation when a run generated; relevance when a run had a
# relevance judge; judged when a run was judged.
Summary = Literal["retrieval", "generation", "relevance", "judged"]
UNIT = (0.0, 1.0)
COUNT = (0.0, math.inf)


@dataclass(frozen=True)
class Metric:
    """One logged metric.

    `stage`: the stage whose output it scores. `quality`: a configuration can be chosen by it; costs, error
    rates and diagnostics are traded against quality or watched, not ranked by. `per_question`: it is the mean
    of per-question values in per_query.jsonl (what a paired test pairs); otherwise one value per run (a
    percentile, a pooled micro average, an AUC). `deterministic`: the same configuration logs the same value
    again (what `best --verify` requires equal); timings are not. `summary`: the summary-table group that shows
    it by default (None: only when asked for). `whole_chunking`: it counts every relevant chunk of the chunking
    (recall, nDCG's and MAP's ideal) or its best possible precision (precision-Ω), so it is unknown when only a
    retriever's returned chunks are known (a whole retriever). `headline`: shown beside the metric `diff` sorts by.
    `spread`: a mean over questions kept out of per_query.jsonl (a generation's costs), logged with its standard
    deviation across questions as a per-question metric is (`std_name`).
    """

    name: str
    stage: Stage
    direction: Direction = "maximize"
    bounds: tuple[float, float] = UNIT
    per_question: bool = True
    deterministic: bool = True
    quality: bool = True
    summary: Summary | None = None
    whole_chunking: bool = False
    headline: bool = False
    spread: bool = False

    @property
    def rankable(self) -> bool:
        return self.quality and self.direction != "none"

    def improvement(self, before: float, after: float) -> float:
        """How much better `after` is than `before` in this metric's direction (negative: worse)."""
        return after - before if self.direction != "minimize" else before - after


def _declare() -> dict[str, Metric]:
    def watched(name: str, stage: Stage, direction: Direction, bounds: tuple[float, float] = UNIT,
                per_question: bool = False, deterministic: bool = True, summary: Summary | None = None,
                spread: bool = False) -> Metric:
        return Metric(name, stage, direction, bounds, per_question, deterministic, quality=False, summary=summary,
                      spread=spread)

    def retrieval(name: str) -> Metric:
        return Metric(name, "retrieval", summary="retrieval" if name in RETRIEVAL_SUMMARY else None,
                      whole_chunking=name in WHOLE_CHUNKING, headline=name in HEADLINE)

    metrics = [
        *(retrieval(name) for name in (*TOKEN_METRICS, "precision_omega", *CHUNK_METRICS, *RANKING_METRICS)),
        # what was passed on: passages, and their summed length in the token metrics' unit (`metrics.unit`)
        *(watched(name, "retrieval", "minimize", COUNT, per_question=True) for name in CONTEXT_SIZE),
        # the share of a question's evidence its parsed documents hold (1 where evidence is given as spans)
        watched("evidence_located", "retrieval", "maximize", per_question=True),
        # with a query rewriter: the share of questions searched as asked because their rewrite failed, texts searched
        # per question, the rewrites' tokens per question
        watched("query_failure_rate", "retrieval", "minimize"),
        *(watched(name, "retrieval", "minimize", COUNT) for name in ("query_texts_mean", "query_prompt_tokens_mean",
                                                                     "query_completion_tokens_mean")),
        *(Metric(name, "relevance", summary="relevance") for name in (*RELEVANCE_METRICS, *RELEVANCE_JUDGED)),
        watched("context_relevance_auc", "relevance", "maximize", summary="relevance"),
        watched("relevance_judge_failure_rate", "relevance", "minimize"),
        *(Metric(name, "answer", summary="generation", headline=name in HEADLINE) for name in ANSWER_METRICS),
        # per question in metrics.json, not per_query.jsonl
        watched("generation_error_rate", "answer", "minimize", summary="generation", spread=True),
        *(watched(name, "answer", "minimize", COUNT, spread=True)
          for name in ("prompt_tokens_mean", "completion_tokens_mean", "answer_tokens_mean")),
        *(Metric(name, "judged", summary="judged", headline=name in HEADLINE) for name in JUDGED_METRICS),
        *(Metric(name, "judged", per_question=False) for name in ("faithfulness_micro", "groundedness_micro",
                                                                  "faithfulness_corrected",
                                                                  "groundedness_corrected")),
        Metric("context_relevance_corrected", "relevance", per_question=False),
        *(watched(f"triad_{band}", "judged", "none", per_question=True) for band, _ in BANDS),
        watched("claims_per_answer", "judged", "none", COUNT, per_question=True),
        watched("judge_failure_rate", "judged", "minimize", summary="judged"),
        *(watched(name, "judged", "minimize") for name in ("judge_failure_rate_support",
                                                           "judge_failure_rate_questions")),
        watched("judge_auc", "judged", "maximize"),
        *(watched(f"{timing}_{percentile}", "latency", "minimize", COUNT, deterministic=False,
                  summary="generation" if f"{timing}_{percentile}" == "latency_ms_p50" else None)
          for timing in ("search_ms", "rerank_ms", "generation_ms", "latency_ms") for percentile in ("p50", "p95")),
        # money (`prices`): each question's calls and compute, and the run's sum; timed work makes them vary
        watched("cost_per_question", "cost", "minimize", COUNT, per_question=True, deterministic=False),
        watched("cost_total", "cost", "minimize", COUNT, deterministic=False),
    ]
    return {metric.name: metric for metric in metrics}


CONTEXT_SIZE = ("context_passages", "context_size")  # what each question passes on: passages, their summed length
# A sweep's summary table: these retrieval metrics always (latency_ms_p50 is end to end once a run generates).
RETRIEVAL_SUMMARY = ("token_recall", "token_precision", "token_iou", "precision_omega", "recall", "mrr", "ndcg")
WHOLE_CHUNKING = ("precision_omega", "recall", "ndcg", "map")
HEADLINE = ("token_iou", "recall", "mrr", "answer_f1", "answer_correctness", "faithfulness")
DEFAULT_RANKING = "token_iou"  # when a sweep sets no optimized_metric, and for `ragsweep best/report`
DEFAULT_ANSWER_RANKING = "answer_f1"  # what `diff` sorts by when both runs answered
# Runs that differ in a stage's settings rank by what that stage moves: generators (their passages tie) by
# answer_f1, rerankers (the order within the k) by ndcg; never a judged metric.
RANKING_BY_VARIED_STAGE = {"generator": DEFAULT_ANSWER_RANKING, "reranker": "ndcg"}

METRICS: dict[str, Metric] = _declare()


def metric(name: str) -> Metric:
    """The declared metric `name`; ValueError naming the known ones otherwise."""
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; metrics: {', '.join(METRICS)}") from None


def names(*, stage: Stage | None = None, rankable: bool | None = None, per_question: bool | None = None,
          deterministic: bool | None = None, whole_chunking: bool | None = None,
          headline: bool | None = None) -> tuple[str, ...]:
    """The declared metrics' names, in declaration order, filtered by what is given."""
    wanted = {"stage": stage, "rankable": rankable, "per_question": per_question, "deterministic": deterministic,
              "whole_chunking": whole_chunking, "headline": headline}
    return tuple(m.name for m in METRICS.values()
                 if all(value is None or getattr(m, field) == value for field, value in wanted.items()))


def objectives(optimized_metric: str | Sequence[str] | None) -> tuple[str, ...]:
    """`optimized_metric` as the metrics it names: none, one, or a list a multi-objective sweep trades off
    (`sweeps/optuna_pareto.yaml`), whose first is the one its summary ranks by."""
    if optimized_metric is None:
        return ()
    if isinstance(optimized_metric, str):
        return (optimized_metric,)
    return tuple(str(name) for name in optimized_metric)


def summary_columns(group: Summary) -> tuple[str, ...]:
    """The metrics a summary table shows by default in `group`, in declaration order."""
    return tuple(m.name for m in METRICS.values() if m.summary == group)


# Names a job logs beside the declared metrics: derived from one (`std_name`, `interval_names`) or counting the
# job's work. Never ranked, never summary columns.
WORK_PREFIXES = ("seconds_", "cache_hits_", "cache_misses_", "dataset_")  # per stage, per cache stage, per loader count
WORK_NAMES = ("n_chunks", "located_exact", "located_fuzzy", "cores_busy_elsewhere")


def std_name(name: str) -> str:
    """The logged standard deviation across questions of metric `name` (per question, or with `spread`)."""
    return f"{name}_std"


def interval_names(name: str) -> tuple[str, str]:
    """The logged ends of a corrected estimate's 95% interval."""
    return f"{name}_low", f"{name}_high"


def declares(logged: str) -> bool:
    """Whether `logged` is a name a job may log: a declared metric, a per-question metric's standard deviation, an
    end of a corrected metric's interval, or a count of the job's work (seconds per stage, cache hits and misses,
    chunks, located texts, the loader's counts, cores busy elsewhere)."""
    if logged in METRICS or logged in WORK_NAMES or logged.startswith(WORK_PREFIXES):
        return True
    stem, _, end = logged.rpartition("_")
    if end == "std":
        return stem in METRICS and (METRICS[stem].per_question or METRICS[stem].spread)
    if end in ("low", "high"):
        return stem in METRICS and stem.endswith("_corrected")
    return False
