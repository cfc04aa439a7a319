"""The query stage of a job: each question's search texts, cached per question and rewriter, and the rankings of a
question's texts fused into one."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from ragsweep.identity import fingerprint
from ragsweep.query.base import Rewrite
from ragsweep.retrieval.base import reciprocal_rank
from ragsweep.runner.build import Pipeline
from ragsweep.types import Hit

log = logging.getLogger(__name__)


def rewritten(pipeline: Pipeline, questions: Sequence[str]) -> list[Rewrite] | None:
    """Each question's rewrite (None without a rewriter). A rewrite is cached under the rewriter's settings and the
    question, so every configuration and round that asks it again reuses it; a failed one is returned with the
    question as its text and not cached, so a rerun asks again."""
    if pipeline.query is None:
        return None
    keys = rewrite_keys(pipeline, questions)

    def compute(positions: list[int]) -> list[dict[str, np.ndarray]]:
        return [_pack(made) for made in pipeline.query.component.rewrite([questions[i] for i in positions])]

    before = pipeline.cache.misses["rewrites"]
    entries = pipeline.cache.get_or_compute_each("rewrites", keys, compute, storable=lambda a: not str(a["error"]))
    rewrites = [unpack_rewrite(entry) for entry in entries]
    made = pipeline.cache.misses["rewrites"] - before
    log.info("rewrites: %d made, %d from the cache, %d failed (searched as asked)", made, len(set(keys)) - made,
             sum(rewrite.error is not None for rewrite in rewrites))
    return rewrites


def rewrite_keys(pipeline: Pipeline, questions: Sequence[str]) -> list[str]:
    """The key each question's rewrite is cached under: the rewriter's settings and the question."""
    return [fingerprint("rewrite", pipeline.query.signature, question) for question in questions]


def search_texts(rewrites: Sequence[Rewrite]) -> tuple[list[str], list[range]]:
    """Every question's texts in one list, and the positions in it of each question's."""
    texts, owned = [], []
    for rewrite in rewrites:
        owned.append(range(len(texts), len(texts) + len(rewrite.texts)))
        texts += rewrite.texts
    return texts, owned


def fuse_rewrites(rankings: Sequence[Sequence[Hit]], owned: Sequence[range], k: int) -> list[list[Hit]]:
    """Each question's top k over the rankings of its texts, fused by reciprocal rank (a single text's ranking as
    it is)."""
    return [list(rankings[texts[0]][:k]) if len(texts) == 1 else reciprocal_rank([rankings[i] for i in texts], k)
            for texts in owned]


def per_question_ms(milliseconds: np.ndarray, owned: Sequence[range], sample: Sequence[int]) -> np.ndarray:
    """A question's search milliseconds, for the questions at `sample`: its texts' count times the mean of the
    texts' timed searches (each text is one search)."""
    mean = float(np.mean(milliseconds)) if len(milliseconds) else 0.0
    return np.array([mean * len(owned[position]) for position in sample])


def rewrite_metrics(rewrites: Sequence[Rewrite] | None) -> dict[str, float]:
    """Per run: the share of questions whose rewrite failed, the texts searched per question, and the rewrites'
    tokens per question."""
    if not rewrites:
        return {}
    count = len(rewrites)
    return {"query_failure_rate": sum(r.error is not None for r in rewrites) / count,
            "query_texts_mean": sum(len(r.texts) for r in rewrites) / count,
            "query_prompt_tokens_mean": sum(r.prompt_tokens for r in rewrites) / count,
            "query_completion_tokens_mean": sum(r.completion_tokens for r in rewrites) / count}


def _pack(made: Rewrite) -> dict[str, np.ndarray]:
    return {"texts": np.array(made.texts), "error": np.array(made.error or ""),
            "prompt_tokens": np.array(made.prompt_tokens), "completion_tokens": np.array(made.completion_tokens),
            "latency_ms": np.array(made.latency_ms)}


def unpack_rewrite(entry: dict[str, np.ndarray]) -> Rewrite:
    return Rewrite(tuple(str(text) for text in entry["texts"].tolist()), str(entry["error"]) or None,
                   int(entry["prompt_tokens"]), int(entry["completion_tokens"]),
                   float(entry["latency_ms"]) if "latency_ms" in entry else 0.0)  # kept before rewrites were timed
