"""What answering cost, per question and per run: failures, tokens and milliseconds.

A failed generation counts in `generation_error_rate` and nowhere else: it is left out of the
token means and latency percentiles, as it is left out of the answer metrics' means.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

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
