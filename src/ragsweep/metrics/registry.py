"""Every metric a job logs, declared once: which way is better, its bounds, its stage, per question or per run.

Ranking (`best`, `report`, a sweep's summary), `gate` and the summary tables read their direction and
kind from here, so "lower is better for latency" or "a micro average has no per-question values" is
decided in one place rather than in a list per module.
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

Stage = Literal["retrieval", "relevance", "answer", "judged", "latency"]
Direction = Literal["maximize", "minimize", "none"]
UNIT = (0.0, 1.0)
COUNT = (0.0, math.inf)


@dataclass(frozen=True)
class Metric:
    """One logged metric.

    `stage`: the stage whose output it scores. `quality`: a configuration can be chosen by it; costs, error
    rates and diagnostics are traded against quality or watched, not ranked by. `per_question`: it is the mean
    of per-question values in per_query.jsonl (what a paired test pairs); otherwise one value per run (a
    percentile, a pooled micro average, an AUC). `deterministic`: the same configuration logs the same value
    again (what `best --verify` requires equal); timings are not.
    """

    name: str
    stage: Stage
    direction: Direction = "maximize"
    bounds: tuple[float, float] = UNIT
    per_question: bool = True
    deterministic: bool = True
    quality: bool = True

    @property
    def rankable(self) -> bool:
        return self.quality and self.direction != "none"

    def improvement(self, before: float, after: float) -> float:
        """How much better `after` is than `before` in this metric's direction (negative: worse)."""
        return after - before if self.direction != "minimize" else before - after


def _declare() -> dict[str, Metric]:
    def watched(name: str, stage: Stage, direction: Direction, bounds: tuple[float, float] = UNIT,
                per_question: bool = False, deterministic: bool = True) -> Metric:
        return Metric(name, stage, direction, bounds, per_question, deterministic, quality=False)

    metrics = [
        *(Metric(name, "retrieval") for name in (*TOKEN_METRICS, "precision_omega", *CHUNK_METRICS, *RANKING_METRICS)),
        *(Metric(name, "relevance") for name in (*RELEVANCE_METRICS, *RELEVANCE_JUDGED)),
        watched("context_relevance_auc", "relevance", "maximize"),
        watched("relevance_judge_failure_rate", "relevance", "minimize"),
        *(Metric(name, "answer") for name in ANSWER_METRICS),
        watched("generation_error_rate", "answer", "minimize"),  # per question in metrics.json, not per_query.jsonl
        *(watched(name, "answer", "minimize", COUNT)
          for name in ("prompt_tokens_mean", "completion_tokens_mean", "answer_tokens_mean")),
        *(Metric(name, "judged") for name in JUDGED_METRICS),
        *(Metric(name, "judged", per_question=False) for name in ("faithfulness_micro", "groundedness_micro",
                                                                  "faithfulness_corrected",
                                                                  "groundedness_corrected")),
        Metric("context_relevance_corrected", "relevance", per_question=False),
        *(watched(f"triad_{band}", "judged", "none", per_question=True) for band, _ in BANDS),
        watched("claims_per_answer", "judged", "none", COUNT, per_question=True),
        *(watched(name, "judged", "minimize") for name in ("judge_failure_rate", "judge_failure_rate_support",
                                                           "judge_failure_rate_questions")),
        watched("judge_auc", "judged", "maximize"),
        *(watched(f"{timing}_{percentile}", "latency", "minimize", COUNT, deterministic=False)
          for timing in ("search_ms", "rerank_ms", "generation_ms", "latency_ms") for percentile in ("p50", "p95")),
    ]
    return {metric.name: metric for metric in metrics}


METRICS: dict[str, Metric] = _declare()


def metric(name: str) -> Metric:
    """The declared metric `name`; ValueError naming the known ones otherwise."""
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; metrics: {', '.join(METRICS)}") from None


def names(*, stage: Stage | None = None, rankable: bool | None = None, per_question: bool | None = None,
          deterministic: bool | None = None) -> tuple[str, ...]:
    """The declared metrics' names, in declaration order, filtered by what is given."""
    return tuple(m.name for m in METRICS.values()
                 if (stage is None or m.stage == stage) and (rankable is None or m.rankable == rankable)
                 and (per_question is None or m.per_question == per_question)
                 and (deterministic is None or m.deterministic == deterministic))


def objectives(optimized_metric: str | Sequence[str] | None) -> tuple[str, ...]:
    """`optimized_metric` as the metrics it names: none, one, or a list a multi-objective sweep trades off
    (`sweeps/optuna_pareto.yaml`), whose first is the one its summary ranks by."""
    if optimized_metric is None:
        return ()
    if isinstance(optimized_metric, str):
        return (optimized_metric,)
    return tuple(str(name) for name in optimized_metric)
