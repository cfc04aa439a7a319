"""Judge calls cached like every stage: one verdict per (judge, task, texts), shared across jobs and runs.

The answer judge, the relevance judge and `ragsweep generate`'s answerability filter all judge pairs
through here, so configurations that produce the same pair share its verdict and a rerun judges nothing
again. A failed call is returned with its status and raw output, and never stored.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from ragsweep.cache import StageCache
from ragsweep.identity import fingerprint
from ragsweep.judging.base import Pair, Verdict
from ragsweep.runner.build import Built

log = logging.getLogger(__name__)


def cached_verdicts(judge: Built, cache: StageCache, pairs: Sequence[Pair]) -> list[Verdict]:
    """One verdict per pair; judged once per (judge, task, texts) across jobs and runs, failures never stored."""
    if not pairs:
        return []
    if not getattr(judge.component, "cached", True):
        cache.misses["verdicts"] += len(pairs)
        return judge.component.judge(pairs)
    keys = verdict_keys(judge, pairs)

    def compute(positions: list[int]) -> list[dict[str, np.ndarray]]:
        return [_pack(verdict) for verdict in judge.component.judge([pairs[i] for i in positions])]

    before = cache.misses["verdicts"]
    entries = cache.get_or_compute_each("verdicts", keys, compute, batch=32, storable=lambda e: str(e["status"]) == "ok")
    made = cache.misses["verdicts"] - before
    log.info("verdicts: %d judged, %d from the cache", made, len(set(keys)) - made)
    return [unpack_verdict(entry) for entry in entries]


def verdict_keys(judge: Built, pairs: Sequence[Pair]) -> list[str]:
    """The key each pair's verdict is cached under (for a judge whose verdicts are cached: `cached`, default True)."""
    return [fingerprint("verdict", judge.signature, pair.task, pair.claim, pair.passage) for pair in pairs]


def _pack(verdict: Verdict) -> dict[str, np.ndarray]:
    return {"score": np.array(np.nan if verdict.score is None else verdict.score), "status": np.array(verdict.status),
            "raw": np.array(verdict.raw), "spent": np.array([verdict.prompt_tokens, verdict.completion_tokens,
                                                             verdict.latency_ms])}


def unpack_verdict(entry: dict[str, np.ndarray]) -> Verdict:
    status = str(entry["status"])
    prompt, completion, milliseconds = entry["spent"].tolist() if "spent" in entry else (0, 0, 0.0)  # kept untimed
    return Verdict(float(entry["score"]) if status == "ok" else None, status, str(entry["raw"]), int(prompt),
                   int(completion), float(milliseconds))
