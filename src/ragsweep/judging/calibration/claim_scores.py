"""A judge's score for each labelled claim: its best verdict over the claim's passages.

A claim is judged against each of its passages and scores the maximum support over them (as
`faithfulness` uses it); a claim whose every verdict failed is recorded as failed, with what the judge
said, and never scored 0.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tqdm.auto import tqdm

from ragsweep.judging.base import Judge, Pair, Verdict
from ragsweep.judging.calibration.labelled_claims import LabelledClaim

BATCH_CLAIMS = 32  # claims per judge call: large enough for a batching backend, small enough for a live bar


@dataclass(frozen=True)
class ClaimScore:
    """A judged claim: `score` is the best ok verdict over its passages; None when all of them failed."""

    id: str
    label: int
    kind: str
    score: float | None
    status: str  # "ok", or the first failed verdict's status when every verdict failed
    raw: str = ""  # what the judge said on a failed claim (first failure), for reading afterwards


def score_claims(judge: Judge, claims: Sequence[LabelledClaim]) -> tuple[list[ClaimScore], int, int, float]:
    """Each claim's score over its passages, the failed and total verdicts, and the seconds spent judging."""
    scored, failed, total, seconds = [], 0, 0, 0.0
    for batch, pairs in claim_batches(claims):
        began = time.perf_counter()
        verdicts = judge.judge(pairs)
        seconds += time.perf_counter() - began
        if len(verdicts) != len(pairs):
            raise ValueError(f"{type(judge).__name__}.judge returned {len(verdicts)} verdicts for "
                             f"{len(pairs)} pairs; a judge must return one verdict per pair, in order")
        position = 0
        for claim in batch:
            mine = verdicts[position:position + len(claim.context)]
            position += len(claim.context)
            scored.append(_claim_score(claim, mine))
            failed += sum(not verdict.ok for verdict in mine)
        total += len(pairs)
    return scored, failed, total, seconds


def claim_batches(claims: Sequence[LabelledClaim]) -> Iterator[tuple[Sequence[LabelledClaim], list[Pair]]]:
    """Claims `BATCH_CLAIMS` at a time, each batch with its (claim, passage) support pairs in order, under one
    progress bar."""
    with tqdm(total=len(claims), desc="judging claims", unit="claim", disable=len(claims) < 2) as bar:
        for start in range(0, len(claims), BATCH_CLAIMS):
            batch = claims[start:start + BATCH_CLAIMS]
            yield batch, [Pair(claim.claim, passage, "support") for claim in batch for passage in claim.context]
            bar.update(len(batch))


def _claim_score(claim: LabelledClaim, verdicts: Sequence[Verdict]) -> ClaimScore:
    ok = [verdict.score for verdict in verdicts if verdict.ok]
    if ok:
        return ClaimScore(claim.id, claim.label, claim.kind, float(max(ok)), "ok")
    first = verdicts[0]
    return ClaimScore(claim.id, claim.label, claim.kind, None, first.status, first.raw[:2000])
