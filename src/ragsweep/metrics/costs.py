"""What answering cost, per question and per run: failures, tokens, milliseconds and money.

A failed generation counts in `generation_error_rate` and nowhere else: it is left out of the
token means and latency percentiles, as it is left out of the answer metrics' means. Money counts every call
made, failed or not: a failed call was paid for.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragsweep.generation.base import Generation

COST_METRICS = ("generation_error_rate", "prompt_tokens_mean", "completion_tokens_mean", "answer_tokens_mean")


def costs_per_query(generations: Sequence[Generation], count_tokens: Callable[[str], int]) -> list[dict[str, float]]:
    """Per question: `generation_error_rate` 1 if its generation failed, else 0 (so the mean over questions
    is the share that failed), and for answered ones the prompt, completion and answer tokens (the answer's
    tokens counted with ragsweep's tokenizer, so generators with different vocabularies compare)."""
    rows = []
    for made in generations:
        if made.error is not None:
            rows.append({"generation_error_rate": 1.0})
            continue
        rows.append({"generation_error_rate": 0.0, "prompt_tokens_mean": float(made.prompt_tokens),
                     "completion_tokens_mean": float(made.completion_tokens),
                     "answer_tokens_mean": float(count_tokens(made.answer or ""))})
    return rows


@dataclass(frozen=True)
class Call:
    """A model's work for one question, as it is priced: the model (`prices.models` key; None for one without a
    token price), whether it ran at an endpoint (remote: its time is not ours to price), its tokens and seconds."""

    model: str | None
    remote: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Prices:
    """`prices` in the config: per model, the price of a million prompt (`input`) and completion (`output`)
    tokens, and `cpu_second`, the price of a second a local model or embedder works on a question."""

    models: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # model -> (input, output)
    cpu_second: float = 0.0

    @classmethod
    def from_config(cls, prices: Mapping[str, Any] | None) -> Prices:
        """Checked prices; ValueError naming the key for a price that is not a number >= 0 or an unknown key."""
        prices = dict(prices or {})
        unknown = sorted(set(prices) - {"models", "cpu_second"})
        if unknown:
            raise ValueError(f"prices.{unknown[0]}: unknown key; prices has models and cpu_second")
        models = {}
        for model, price in dict(prices.get("models") or {}).items():
            price = dict(price or {})
            extra = sorted(set(price) - {"input", "output"})
            if extra:
                raise ValueError(f"prices.models.{model}.{extra[0]}: unknown key; give input and output (per million "
                                 "tokens)")
            models[str(model)] = (_price(price.get("input", 0.0), f"prices.models.{model}.input"),
                                  _price(price.get("output", 0.0), f"prices.models.{model}.output"))
        return cls(models, _price(prices.get("cpu_second", 0.0), "prices.cpu_second"))

    def of(self, call: Call) -> float:
        """input x prompt_tokens / 10^6 + output x completion_tokens / 10^6 for a model with a price, plus
        cpu_second x seconds for a local call (what the machine it ran on costs for that time)."""
        unit_in, unit_out = self.models.get(call.model, (0.0, 0.0)) if call.model is not None else (0.0, 0.0)
        tokens = (unit_in * call.prompt_tokens + unit_out * call.completion_tokens) / 1e6
        return tokens + (0.0 if call.remote else self.cpu_second * call.seconds)

    def unpriced(self, calls: Sequence[Call]) -> list[str]:
        """The remote models among `calls` with no price: their tokens count 0 in the cost."""
        return sorted({call.model or "unnamed" for call in calls if call.remote and call.model not in self.models})


def _price(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{key}={value!r}: give a price >= 0 (per million tokens for a model, per second for "
                         "cpu_second)")
    return float(value)


def cost_per_question(calls: Sequence[Sequence[Call]], prices: Prices) -> list[float]:
    """Each question's cost: the sum of `Prices.of` over its calls (every call made, failed ones too)."""
    return [sum(prices.of(call) for call in question) for question in calls]


def percentiles(name: str, milliseconds: np.ndarray) -> dict[str, float]:
    """`<name>_p50` and `<name>_p95` (numpy's linear interpolation between order statistics); none when empty."""
    if not len(milliseconds):
        return {}
    return {f"{name}_p{q}": float(np.percentile(milliseconds, q)) for q in (50, 95)}


def percentile_summaries(name: str, milliseconds: np.ndarray, samples: int = 1000,
                         seed: int = 0) -> dict[str, dict[str, object]]:
    """For metrics.json: each percentile of `percentiles` with the questions it was taken over (`n`) and
    a percentile-bootstrap 95% CI (the questions resampled with replacement, fixed seed)."""
    if not len(milliseconds):
        return {}
    draws = np.asarray(milliseconds)[np.random.default_rng(seed).integers(0, len(milliseconds),
                                                                          size=(samples, len(milliseconds)))]
    summaries = {}
    for q in (50, 95):
        resampled = np.percentile(draws, q, axis=1)
        summaries[f"{name}_p{q}"] = {"value": float(np.percentile(milliseconds, q)), "n": len(milliseconds),
                                     "ci95": [float(np.percentile(resampled, 2.5)),
                                              float(np.percentile(resampled, 97.5))]}
    return summaries


def end_to_end_ms(search_ms: np.ndarray, rerank_ms: np.ndarray, generation_ms: np.ndarray | None) -> np.ndarray:
    """Milliseconds per timed question from retrieval to answer: search + rerank + generation, each as
    measured when that stage ran (cached stages keep their times). Questions whose generation failed
    (NaN in `generation_ms`) are left out."""
    total = search_ms + rerank_ms if len(rerank_ms) else search_ms.copy()
    if generation_ms is None:
        return total
    total = total + generation_ms
    return total[~np.isnan(total)]
