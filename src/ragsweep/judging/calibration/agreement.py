"""How well a judge's claim scores agree with the labels: the threshold to use and the figures per kind.

The threshold maximises balanced accuracy (the mean of the true positive and true negative rates, so a
lopsided claims set cannot reward a judge that says "supported" to everything); each kind of claim gets
its accuracy at that threshold and an AUC. Claims a judge failed on are left out of every figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from ragsweep.judging.calibration.claim_scores import ClaimScore


@dataclass(frozen=True)
class KindResult:
    """One kind of claim. `auc` is within the kind when it holds both labels; for a kind of one label, the
    AUC of its claims against every claim of the other label (`auc_against` says which)."""

    kind: str
    n: int
    failures: int
    label: int | None  # None: the kind holds both labels
    auc: float | None
    auc_against: str
    accuracy: float | None  # share classified correctly at the threshold
    balanced_accuracy: float | None = None  # only for a kind holding both labels


def best_threshold(labels: np.ndarray, scores: np.ndarray) -> float:
    """The threshold t (a claim is supported when score >= t) that maximises balanced accuracy.

    Every cut between two consecutive distinct scores is tried, plus "all supported" (t = 0) and, when
    the top score is below 1, "none supported". Of the cuts that tie at the maximum, the middle one is
    taken (the lower middle for an even count); within the chosen gap (lo, hi], t is the shortest
    decimal nearest its midpoint, so the printed threshold reproduces the same decisions.
    """
    levels = np.unique(scores)
    positives, negatives = labels == 1, labels == 0
    # at cut j (the first j levels unsupported): TPR = positives scoring >= levels[j], TNR = negatives below it
    below_pos = np.searchsorted(np.sort(scores[positives]), levels, side="left")
    below_neg = np.searchsorted(np.sort(scores[negatives]), levels, side="left")
    tpr = np.append(1 - below_pos / positives.sum(), 0.0)
    tnr = np.append(below_neg / negatives.sum(), 1.0)
    balanced = (tpr + tnr) / 2
    if levels[-1] >= 1.0:
        balanced = balanced[:-1]  # no threshold in [0, 1] marks a score of 1 unsupported
    tied = np.flatnonzero(balanced >= balanced.max() - 1e-12)
    cut = int(tied[(len(tied) - 1) // 2])
    if cut == 0:
        return 0.0
    high = float(levels[cut]) if cut < len(levels) else 1.0
    return _short_between(float(levels[cut - 1]), high)


def _short_between(low: float, high: float) -> float:
    """The decimal with the fewest digits nearest (low + high) / 2 that lies in (low, high]."""
    middle = (low + high) / 2
    for digits in range(1, 17):
        value = round(middle, digits)
        if low < value <= high:
            return value
    return high


def kind_breakdown(scored: Sequence[ClaimScore], threshold: float) -> list[KindResult]:
    """Per kind (supported kinds first, then mixed, then unsupported, larger first; claims without a kind
    under ""): agreement at the threshold and AUC."""
    ok = [claim for claim in scored if claim.score is not None]
    results = [_kind_result(kind, [claim for claim in scored if claim.kind == kind], ok, threshold)
               for kind in dict.fromkeys(claim.kind for claim in scored)]
    return sorted(results, key=lambda kind: ({1: 0, None: 1, 0: 2}[kind.label], -kind.n))


def _kind_result(kind: str, members: list[ClaimScore], ok: list[ClaimScore], threshold: float) -> KindResult:
    mine = [claim for claim in members if claim.score is not None]
    failures, labels = len(members) - len(mine), {claim.label for claim in members}
    accuracy = _accuracy(mine, threshold) if mine else None
    if len(labels) == 2:
        y, s = np.array([c.label for c in mine]), np.array([c.score for c in mine])
        both = len(set(y.tolist())) == 2  # failures may have left one label only
        return KindResult(kind, len(members), failures, None, float(roc_auc_score(y, s)) if both else None,
                          "within the kind", accuracy,
                          float(balanced_accuracy_score(y, s >= threshold)) if both else None)
    label = labels.pop()
    pooled = mine + [claim for claim in ok if claim.label != label]
    auc = float(roc_auc_score([c.label for c in pooled], [c.score for c in pooled])) \
        if mine and len(pooled) > len(mine) else None
    return KindResult(kind, len(members), failures, label, auc, f"all label-{1 - label} claims", accuracy)


def _accuracy(claims: Sequence[ClaimScore], threshold: float) -> float:
    return float(np.mean([(claim.score >= threshold) == bool(claim.label) for claim in claims]))
