"""How far to trust a judge: its agreement with labelled claims (`ragsweep calibrate`).

A judge is run on every (claim, passage) pair of a labelled claims file; a claim's score is the
maximum support over its passages (as `faithfulness` uses it). Agreement is reported held out: every
fitted choice (threshold, weights) is fitted on one claims set and measured on another, over other
corpora, both ways (`cross_corpus`); the same set's own figures are in-sample and flatter the judge. From the scores and the labels:
ROC AUC (sklearn's `roc_auc_score`), the threshold that maximises balanced accuracy
(mean of the true positive and true negative rates, so a lopsided file cannot reward a judge that
says "supported" to everything), balanced accuracy and F1 (label 1, supported, is the positive
class) at that threshold, per `kind` of claim, the share of claims the judge failed on, and
seconds per claim. A claim whose every verdict failed is recorded as failed and left out of every
number but the failure rate; it is never scored 0.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import balanced_accuracy_score, f1_score, roc_auc_score

from ragsweep.judging.calibration.agreement import KindResult, best_threshold, kind_breakdown
from ragsweep.judging.base import VALIDATED_AUC, Judge
from ragsweep.judging.calibration.claim_scores import ClaimScore, score_claims
from ragsweep.judging.calibration.labelled_claims import LabelledClaim

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Calibration:
    """A judge's agreement with a claims file; `to_dict()` is what `calibration/<judge>.json` holds."""

    judge: str
    claims_file: str
    n: int
    failures: int
    verdict_failure_rate: float
    auc: float
    balanced_accuracy: float
    f1: float
    threshold: float
    seconds_per_claim: float
    load_s: float  # the judge's preflight(); a model loaded in the first call counts in seconds_per_claim
    kinds: list[KindResult]
    claims: list[ClaimScore]
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def failure_rate(self) -> float:
        return self.failures / self.n

    def to_dict(self) -> dict[str, Any]:
        summary = {key: value for key, value in asdict(self).items() if key not in ("kinds", "claims")}
        return {**summary, "failure_rate": self.failure_rate, "kinds": [asdict(kind) for kind in self.kinds],
                "claims": [asdict(claim) for claim in self.claims]}


def calibrate(judge: Judge, claims: Sequence[LabelledClaim], name: str = "", claims_file: str = "",
              config: dict[str, Any] | None = None) -> Calibration:
    """Judge every claim against each of its passages and measure agreement with the labels.

    Raises:
        ValueError: no claims, or fewer than one scored claim of each label (AUC is undefined).
    """
    if not claims:
        raise ValueError("no claims to calibrate on")
    started = time.perf_counter()
    if hasattr(judge, "preflight"):
        judge.preflight()
    load_s = time.perf_counter() - started
    fit = getattr(judge, "fit", None)  # a judge fitted on the claims (the ensemble) returns out-of-fold scores
    scored, failed_verdicts, verdicts, judging_s = fit(claims) if callable(fit) else score_claims(judge, claims)
    ok = [claim for claim in scored if claim.score is not None]
    labels = np.array([claim.label for claim in ok])
    scores = np.array([claim.score for claim in ok])
    if len(set(labels.tolist())) < 2:
        raise ValueError(f"the judge scored {len(ok)} of {len(claims)} claims and they hold "
                         f"{'no label' if not ok else f'only label {labels[0]}'}; calibration needs claims of "
                         "both labels (1 supported, 0 not) that the judge did not fail on")
    if len(ok) < len(claims):
        first = next(claim for claim in scored if claim.score is None)
        log.warning("%d of %d claims failed on every passage and are left out (first: %s, %s: %.200s)",
                    len(claims) - len(ok), len(claims), first.id, first.status, first.raw)
    threshold = best_threshold(labels, scores)
    if callable(fit):
        judge.threshold = threshold
    predicted = scores >= threshold
    return Calibration(
        judge=name or type(judge).__name__, claims_file=claims_file, n=len(claims),
        failures=len(claims) - len(ok), verdict_failure_rate=failed_verdicts / verdicts,
        auc=float(roc_auc_score(labels, scores)),
        balanced_accuracy=float(balanced_accuracy_score(labels, predicted)),
        f1=float(f1_score(labels, predicted, zero_division=0.0)), threshold=threshold,
        seconds_per_claim=judging_s / len(claims), load_s=load_s,
        kinds=kind_breakdown(scored, threshold), claims=scored, config=dict(config or {}),
    )


@dataclass(frozen=True)
class HeldOut:
    """A judge fitted on one claims set (its threshold, and weights for a judge that fits them) and measured on
    another: what its numbers are worth on a corpus it was not tuned on."""

    fitted_on: str
    tested_on: str
    n: int
    auc: float
    balanced_accuracy: float
    threshold: float


@dataclass(frozen=True)
class CrossCorpus:
    """In-sample calibrations of two claims sets and the held-out figures both ways; `auc` is the lower held-out
    AUC, the figure a judge's YAML keeps (`judge.auc`) and every table shows beside its metrics."""

    in_sample: list[Calibration]
    held_out: list[HeldOut]

    @property
    def auc(self) -> float:
        return min(result.auc for result in self.held_out)

    @property
    def threshold(self) -> float:
        """The threshold fitted on the first set (the one the judge is shipped with)."""
        return self.in_sample[0].threshold


def cross_corpus(judge: Judge, sets: Sequence[tuple[str, Sequence[LabelledClaim]]], name: str = "",
                 config: dict[str, Any] | None = None) -> CrossCorpus:
    """Calibrate on each of two claims sets, then fit on one and measure on the other, both ways.

    A judge with a `fit` (the ensemble) is fitted on each set once, scoring the other set with those
    weights before the next fit; any other judge's scores do not depend on the fitting set, only its
    threshold does.
    """
    if len(sets) != 2:
        raise ValueError("held-out agreement needs two claims sets, one to fit on and one to measure on")
    fits = callable(getattr(judge, "fit", None))
    in_sample: dict[int, Calibration] = {}
    by_other_fit: dict[int, list[ClaimScore]] = {}  # a fitted judge's scores of each set, fitted on the other
    for this, other in ((1, 0), (0, 1)):  # the first set last: a fitted judge stays fitted on it, as shipped
        in_sample[this] = calibrate(judge, sets[this][1], name, sets[this][0], config)
        if fits:
            by_other_fit[other] = score_claims(judge, sets[other][1])[0]
    scored = by_other_fit if fits else {i: in_sample[i].claims for i in (0, 1)}
    held_out = []
    for fit, test in ((0, 1), (1, 0)):
        ok = [claim for claim in scored[test] if claim.score is not None]
        labels, scores = np.array([c.label for c in ok]), np.array([c.score for c in ok])
        threshold = in_sample[fit].threshold
        held_out.append(HeldOut(sets[fit][0], sets[test][0], len(ok), float(roc_auc_score(labels, scores)),
                                float(balanced_accuracy_score(labels, scores >= threshold)), threshold))
    return CrossCorpus([in_sample[0], in_sample[1]], held_out)


def format_cross(result: CrossCorpus, use: str | None = None) -> str:
    """The table `ragsweep calibrate` prints: held-out figures first, in-sample ones apart and labelled so."""
    lines = [f"judge {result.in_sample[0].judge}: held out (fitted on one claims set, measured on the other)",
             f"  {'fitted on -> measured on':<40}{'n':>5}{'AUC':>8}{'bal.acc':>9}{'threshold':>11}"]
    lines += [f"  {Path(h.fitted_on).stem + ' -> ' + Path(h.tested_on).stem:<40}{h.n:>5}{h.auc:>8.3f}"
              f"{h.balanced_accuracy:>9.3f}{h.threshold:>11}" for h in result.held_out]
    lines += [f"  held-out AUC (the lower): {result.auc:.3f}", "",
              "in sample (fitted and measured on the same set; flatters the judge):"]
    lines += [f"  {Path(c.claims_file).stem:<40}{c.n:>5}{c.auc:>8.3f}{c.balanced_accuracy:>9.3f}{c.threshold:>11}"
              f"   ({c.failures} failed, {c.seconds_per_claim:.3g} s/claim)" for c in result.in_sample]
    if result.auc < VALIDATED_AUC:
        lines.append(f"note: a held-out AUC of {result.auc:.2f} is below {VALIDATED_AUC}: its judged metrics are shown as "
                     "unvalidated")
    lines.append(f"use it: {use or f'judge={result.in_sample[0].judge} judge.threshold={result.threshold} judge.auc={result.auc:.3f}'}")
    return "\n".join(lines)


def format_table(result: Calibration, use: str | None = None) -> str:
    """The plain-text summary `ragsweep calibrate` prints; `use` replaces its last line's settings."""
    lines = [f"judge {result.judge} on {Path(result.claims_file).name or 'claims'}: {result.n} claims",
             f"  ROC AUC            {result.auc:.3f}",
             f"  balanced accuracy  {result.balanced_accuracy:.3f}",
             f"  F1 (supported)     {result.f1:.3f}",
             f"  threshold          {result.threshold}",
             f"  failure rate       {result.failure_rate:.3f} ({result.failures} claims; "
             f"{result.verdict_failure_rate:.3f} of verdicts)",
             f"  s/claim            {result.seconds_per_claim:.3g} (+ {result.load_s:.1f} s preflight)"]
    if any(kind.kind for kind in result.kinds):
        lines += ["", f"  {'kind':<24}{'n':>5}{'label':>7}{'auc':>8}{'accuracy':>10}{'failed':>8}"]
        for kind in result.kinds:
            label = "both" if kind.label is None else str(kind.label)
            lines.append(f"  {kind.kind or '(none)':<24}{kind.n:>5}{label:>7}{_three_places(kind.auc):>8}"
                         f"{_three_places(kind.accuracy):>10}{kind.failures:>8}")
        lines.append("  (auc of a one-label kind: its claims against every claim of the other label; "
                     "accuracy: share right at the threshold)")
    if result.auc < 0.55:
        lines.append(f"note: an AUC of {result.auc:.2f} is chance or worse: this judge does not tell supported from "
                     "unsupported claims on this set, whatever its threshold")
    lines.append(f"use it: {use or f'judge={result.judge} judge.threshold={result.threshold} judge.auc={result.auc:.3f}'}")
    return "\n".join(lines)


def _three_places(value: float | None) -> str:
    """A table cell: three decimals, `-` where there is no value."""
    return "-" if value is None else f"{value:.3f}"


def write_calibration(result: Calibration, folder: str | Path, cross: CrossCorpus | None = None) -> Path:
    """`<folder>/<judge>.json` with the summary and every claim, and with `cross` the held-out figures and the
    other set's in-sample calibration; the path written."""
    path = Path(folder) / f"{result.judge}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = result.to_dict()
    if cross is not None:
        record["held_out"] = {"auc": cross.auc, "directions": [asdict(h) for h in cross.held_out],
                              "other_set": cross.in_sample[1].to_dict()}
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path
