"""Which judged claims people should label: a stratified draw over judge score and configuration.

The population is every scored claim of every judged run. A stratum is (judge-score bin, run): the bins are
the judge's two verdicts (score below its threshold, or at or above it), so both kinds of claim are drawn
however rare one is, and the error rates mu0 and mu1 (`metrics.corrected`) both rest on labels. `n` is split
evenly across the bins and, within a bin, across runs in proportion to their claims (largest remainders); a
stratum smaller than its share gives all it has and the rest goes to the others. Inside a stratum the draw is
simple random sampling without replacement, seeded by (seed, bin, run), so the same population and seed draw
the same claims. A drawn claim's inclusion probability is drawn / size of its stratum; the estimators weight
each label by its inverse, which keeps the stratified draw unbiased.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragsweep.judging.calibration.feedback import FEEDBACK_PREFIX
from ragsweep.metrics.corrected import error_rates, expected_half_width
from ragsweep.metrics.judged import best_passage

BINS = ("judged unsupported", "judged supported")  # a claim's bin is BINS[score >= threshold]
Stratum = tuple[str, str]  # (bin, run id)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One scored claim of one run: claim `number` of question `query_id`'s answer (feedback support/<number>)."""

    run_id: str
    query_id: str
    number: int
    text: str
    score: float
    supported: bool

    @property
    def stratum(self) -> Stratum:
        return BINS[self.supported], self.run_id

    @property
    def feedback(self) -> str:
        return f"{FEEDBACK_PREFIX}{self.number}"


@dataclass(frozen=True, slots=True)
class Draw:
    """The drawn claims with their inclusion probabilities, and each stratum's (size, drawn)."""

    claims: tuple[tuple[Candidate, float], ...]
    strata: Mapping[Stratum, tuple[int, int]]


def candidates(run_id: str, records: Iterable[Mapping[str, Any]], threshold: float) -> list[Candidate]:
    """The scored claims of a run's per_query.jsonl lines (`judged.claims[i].support`: a score per passage,
    None for a failed call); a claim whose every call failed has no score and cannot be drawn."""
    found = []
    for record in records:
        for number, claim in enumerate((record.get("judged") or {}).get("claims", [])):
            best = best_passage(claim["support"])
            if best is not None:
                found.append(Candidate(run_id, str(record["id"]), number, claim["text"], float(best[0]),
                                       best[0] >= threshold))
    return found


def draw(population: Sequence[Candidate], n: int, seed: int = 0) -> Draw:
    """`n` claims of `population` (all of it when smaller), stratified as the module doc says."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"--n must be an integer >= 1, got {n!r}")
    members: dict[Stratum, list[Candidate]] = defaultdict(list)
    for claim in sorted(population, key=lambda c: (c.run_id, c.query_id, c.number)):
        members[claim.stratum].append(claim)
    take = allocate({key: len(claims) for key, claims in members.items()}, n)
    drawn = []
    for key in sorted(members, key=lambda k: (BINS.index(k[0]), k[1])):
        chosen = list(members[key])
        random.Random(f"{seed}:{key[0]}:{key[1]}").shuffle(chosen)
        drawn += [(claim, take[key] / len(members[key])) for claim in chosen[: take[key]]]
    return Draw(tuple(drawn), {key: (len(members[key]), take[key]) for key in members})


def allocate(sizes: Mapping[Stratum, int], n: int) -> dict[Stratum, int]:
    """How many claims to draw from each (bin, run) stratum of `sizes` claims (module doc)."""
    bins = {name: sum(size for (other, _), size in sizes.items() if other == name) for name in BINS}
    per_bin = _even({name: size for name, size in bins.items() if size}, n)
    take: dict[Stratum, int] = {}
    for name, share in per_bin.items():
        take.update(_proportional({key: size for key, size in sizes.items() if key[0] == name}, share))
    return take


def _even(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """`n` split evenly over the keys (the first ones take the remainder), none taking more than its size."""
    take = dict.fromkeys(sizes, 0)
    left = min(n, sum(sizes.values()))
    while left:
        room = [key for key in sizes if take[key] < sizes[key]]
        share, extra = divmod(left, len(room))
        for position, key in enumerate(room):
            give = min(share + (position < extra), sizes[key] - take[key])
            take[key] += give
            left -= give
    return take


def _proportional(sizes: Mapping[Stratum, int], m: int) -> dict[Stratum, int]:
    """`m` (at most the sizes' sum) split in proportion to the sizes, largest remainders first (Hamilton's
    method): no key gets more than its size, since only a fractional quota is rounded up."""
    total = sum(sizes.values())
    quotas = {key: m * size / total for key, size in sizes.items()}
    take = {key: math.floor(quota) for key, quota in quotas.items()}
    by_remainder = sorted(sizes, key=lambda key: (-(quotas[key] - take[key]), key))
    for key in by_remainder[: m - sum(take.values())]:
        take[key] += 1
    return take


def planned_half_widths(labelled: Sequence[tuple[float, int, float]], threshold: float,
                        per_question: Sequence[float], sizes: Sequence[int]) -> dict[int, float]:
    """The expected 95% half-width of a run's corrected faithfulness with each of `sizes` labels, from the
    judge's error measured on `labelled` (its score, the person's 0/1, the inclusion probability) and the run's
    judged faithfulness per question (its share and spread; `metrics.corrected.expected_half_width`).

    Raises:
        ValueError: fewer than 2 labels of a class, a judge that does not separate them, or < 2 questions.
    """
    rates = error_rates([float(score >= threshold) for score, _, _ in labelled],
                        [label for _, label, _ in labelled], [inclusion for _, _, inclusion in labelled])
    values = np.asarray(per_question, dtype=np.float64)
    if values.size < 2:
        raise ValueError(f"{values.size} judged question(s): an interval needs 2 or more")
    share = min(max((float(values.mean()) - rates.mu0) / rates.separation, 0.0), 1.0)
    spread = float(values.var(ddof=1))
    return {size: expected_half_width(size, rates, share, spread, values.size) for size in sizes}
