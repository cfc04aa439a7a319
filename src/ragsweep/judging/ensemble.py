"""A logistic combination of other judges: score = sigmoid(bias + sum_i w_i * s_i), fitted on labelled claims.

Each shipped judge reads one signal (word coverage, sentence cosine, a trained cross-encoder); where they
err differently, a weighted vote can beat the best of them. The weights are a logistic regression (scikit-
learn's `LogisticRegression`, L2, C = 1) of the claims' labels on each member's best-passage score, fitted by
`ragsweep calibrate --judge ensemble`, which reports the AUC out of fold (5-fold stratified cross-validation,
each held-out claim scored as the runtime scores it: combined per (claim, passage) pair, then the best
passage), never on the claims the weights were fitted to. Stacking as in Wolpert (1992), "Stacked
generalization".
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragsweep.identity import fingerprint
from ragsweep.judging.base import Pair, Verdict, check_threshold

log = logging.getLogger(__name__)

FOLDS = 5
SEED = 0
UNFITTED = ("judge.weights is null: the ensemble is not fitted yet; run `ragsweep calibrate --judge ensemble` "
            "first and use the judge it writes (judge=ensemble_fitted), or set judge.weights to one weight per member")


def _sigmoid(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-value)) if value >= 0 else math.exp(value) / (1.0 + math.exp(value))


class EnsembleJudge:
    """sigmoid(bias + sum over members of weight * member score), per (claim, passage) pair.

    A pair that any member failed on fails with that member's status and a raw naming it, never a 0.

    Args:
        members: name -> judge, nested judge configs that Hydra builds (any conf/judge option's settings
            without the runner's keys).
        weights: name -> weight for every member; null until `ragsweep calibrate --judge ensemble` fits them
            (an unfitted ensemble can be calibrated, not used in a sweep).
        bias: The logistic intercept.
        threshold: Score at which a claim counts as supported (calibrate sets it).
        dataset: The job's corpus, handed on to members that learn from it (the trained judge).
    """

    cached = True

    def __init__(self, members: Mapping[str, Any], weights: Mapping[str, float] | None = None, bias: float = 0.0,
                 threshold: float = 0.5, dataset: Any = None) -> None:
        check_threshold(threshold)
        if not isinstance(members, Mapping) or not members:
            raise ValueError("judge.members must name at least one judge, e.g. "
                             "{lexical: {_target_: ragsweep.judging.lexical.LexicalJudge}}")
        for name, member in members.items():
            if not callable(getattr(member, "judge", None)) or not isinstance(getattr(member, "threshold", None),
                                                                               (int, float)):
                raise ValueError(f"judge.members.{name}: {type(member).__name__} is not a judge; give a nested "
                                 "judge config with a _target_ (a class with judge(pairs) and a threshold)")
        if weights is not None:
            if not isinstance(weights, Mapping):
                raise ValueError(f"judge.weights must be null or member -> weight, got {weights!r}")
            unknown = sorted(set(weights) - set(members))
            missing = sorted(set(members) - set(weights))
            if unknown or missing:
                raise ValueError(f"judge.weights must give one weight per member of judge.members "
                                 f"({', '.join(members)}); " + "; ".join(
                                     [f"no member named {', '.join(unknown)}"] * bool(unknown)
                                     + [f"no weight for {', '.join(missing)}"] * bool(missing))
                                 + "; refit with `ragsweep calibrate --judge ensemble`")
            for name, weight in weights.items():
                if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
                    raise ValueError(f"judge.weights.{name} must be a finite number, got {weight!r}")
        if isinstance(bias, bool) or not isinstance(bias, (int, float)) or not math.isfinite(bias):
            raise ValueError(f"judge.bias must be a finite number, got {bias!r}")
        self.members = dict(members)
        self.weights = None if weights is None else {name: float(weights[name]) for name in self.members}
        self.bias, self.threshold, self.dataset = float(bias), float(threshold), dataset
        if dataset is not None:
            for member in self.members.values():  # the trained judge reads its corpus lazily
                if hasattr(member, "dataset") and member.dataset is None:
                    member.dataset = dataset
        self.in_sample_auc: float | None = None  # set by fit()

    @property
    def model_key(self) -> str | None:
        """The members' model identities (None when no member has one). The runner reads it when it builds the
        judge for a sweep, so an unfitted ensemble is refused there, before any work; calibrate never reads it.

        Raises:
            ValueError: the weights are not fitted.
        """
        if self.weights is None:
            raise ValueError(UNFITTED)
        keys = {name: getattr(member, "model_key", None) for name, member in self.members.items()}
        keys = {name: key for name, key in keys.items() if key is not None}
        return fingerprint("ensemble-judge", keys) if keys else None

    def preflight(self) -> None:
        """Load (or train) every member's model before work."""
        for member in self.members.values():
            if callable(getattr(member, "preflight", None)):
                member.preflight()

    def member_verdicts(self, pairs: Sequence[Pair]) -> dict[str, list[Verdict]]:
        """Each member's verdicts on `pairs`; a member that raises or miscounts fails every pair."""
        out = {}
        for name, member in self.members.items():
            try:
                verdicts = list(member.judge(pairs))
                if len(verdicts) != len(pairs):
                    raise ValueError(f"returned {len(verdicts)} verdicts for {len(pairs)} pairs")
            except Exception as error:  # noqa: BLE001 - a judge never raises per pair; this one did
                verdicts = [Verdict(None, "error", f"{type(error).__name__}: {error}") for _ in pairs]
            out[name] = verdicts
        return out

    def combine(self, verdicts: Mapping[str, Sequence[Verdict]], weights: Mapping[str, float], bias: float,
                count: int) -> list[Verdict]:
        """sigmoid(bias + sum w * s) per pair; the first failed member's status, named, where one failed."""
        combined = []
        for i in range(count):
            failed = next(((name, v[i]) for name, v in verdicts.items() if not v[i].ok), None)
            if failed:
                name, verdict = failed
                combined.append(Verdict(None, verdict.status, f"member {name}: {verdict.raw}"[:2000]))
                continue
            score = _sigmoid(bias + sum(weights[name] * v[i].score for name, v in verdicts.items()))
            combined.append(Verdict(score, "ok"))
        return combined

    def judge(self, pairs: Sequence[Pair]) -> list[Verdict]:
        if self.weights is None:
            return [Verdict(None, "error", UNFITTED) for _ in pairs]
        if not pairs:
            return []
        return self.combine(self.member_verdicts(pairs), self.weights, self.bias, len(pairs))

    def fit(self, claims: Sequence[Any]) -> tuple[list[Any], int, int, float]:
        """Judge every claim's pairs with each member once, fit the weights on all claims, and return the
        claims' out-of-fold scores as `calibration.score_claims` returns scores: (claim scores, failed
        verdicts, verdicts, seconds judging).

        Features: each member's best score over the claim's passages on which every member succeeded (the
        runtime fails the other pairs). Out of fold: 5-fold stratified (seed 0; fewer folds when a label has
        fewer than 5 claims); each held-out claim is scored with the other folds' weights per pair, best pair
        kept. `in_sample_auc` is set to the AUC of the final weights on the claims they were fitted on.

        Raises:
            ValueError: fewer than 2 scored claims of each label.
        """
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import StratifiedKFold

        from ragsweep.judging.calibration.claim_scores import ClaimScore, claim_batches

        names = list(self.members)
        per_claim: list[np.ndarray | None] = []  # (passages ok for every member) x members
        firsts: list[Verdict | None] = []
        failed = total = 0
        seconds = 0.0
        for batch, pairs in claim_batches(claims):
            began = time.perf_counter()
            verdicts = self.member_verdicts(pairs)
            seconds += time.perf_counter() - began
            combined = self.combine(verdicts, dict.fromkeys(names, 0.0), 0.0, len(pairs))  # statuses only
            position = 0
            for claim in batch:
                span = range(position, position + len(claim.context))
                position += len(claim.context)
                ok = [i for i in span if combined[i].ok]
                failed += len(span) - len(ok)
                per_claim.append(np.array([[verdicts[n][i].score for n in names] for i in ok]) if ok else None)
                firsts.append(None if ok else combined[span[0]])
            total += len(pairs)
        scored_index = [i for i, matrix in enumerate(per_claim) if matrix is not None]
        labels = np.array([claims[i].label for i in scored_index])
        if len(labels) == 0 or min(np.sum(labels == 0), np.sum(labels == 1)) < 2:
            raise ValueError(f"the members scored {len(scored_index)} of {len(claims)} claims; fitting the "
                             "ensemble needs at least 2 scored claims of each label (1 supported, 0 not)")
        features = np.array([per_claim[i].max(axis=0) for i in scored_index])

        def fitted(rows: np.ndarray) -> tuple[np.ndarray, float]:
            model = LogisticRegression(C=1.0, max_iter=1000).fit(features[rows], labels[rows])
            return model.coef_[0], float(model.intercept_[0])

        def runtime_score(i: int, coef: np.ndarray, intercept: float) -> float:
            return max(_sigmoid(intercept + float(row @ coef)) for row in per_claim[i])

        folds = min(FOLDS, int(np.sum(labels == 0)), int(np.sum(labels == 1)))
        out_of_fold = np.zeros(len(scored_index))
        for train, held in StratifiedKFold(folds, shuffle=True, random_state=SEED).split(features, labels):
            coef, intercept = fitted(train)
            for j in held:
                out_of_fold[j] = runtime_score(scored_index[j], coef, intercept)
        coef, intercept = fitted(np.arange(len(labels)))
        self.weights = {name: round(float(w), 4) for name, w in zip(names, coef)}
        self.bias = round(intercept, 4)
        in_sample = [runtime_score(i, np.array([self.weights[n] for n in names]), self.bias) for i in scored_index]
        self.in_sample_auc = float(roc_auc_score(labels, in_sample))
        log.info("ensemble fitted on %d claims (%d folds): weights %s, bias %.4f, in-sample AUC %.3f",
                 len(labels), folds, self.weights, self.bias, self.in_sample_auc)
        oof = dict(zip(scored_index, out_of_fold.tolist()))
        scored = []
        for i, claim in enumerate(claims):
            if i in oof:
                scored.append(ClaimScore(claim.id, claim.label, claim.kind, float(oof[i]), "ok"))
            else:
                first = firsts[i]
                scored.append(ClaimScore(claim.id, claim.label, claim.kind, None, first.status, first.raw[:2000]))
        return scored, failed, total, seconds


def write_fitted(path: str | Path, config: Mapping[str, Any], judge: EnsembleJudge, threshold: float, auc: float,
                 claims_file: str, in_sample_auc: float | None, name: str = "ensemble") -> Path:
    """`config` (the ensemble's judge config, interpolations kept) with the fitted weights, bias, threshold and
    out-of-fold AUC, as a conf/judge option; the path written."""
    from omegaconf import OmegaConf

    fitted = {**config, "weights": dict(judge.weights or {}), "bias": judge.bias, "threshold": threshold,
              "auc": round(float(auc), 3)}
    header = (f"# Written by `ragsweep calibrate --judge {name}` on {Path(claims_file).name}: weights and bias of a logistic\n"
              f"# regression on the members' best-passage scores; auc {auc:.3f} is out of fold (5-fold CV; "
              f"in-sample {in_sample_auc if in_sample_auc is None else round(in_sample_auc, 3)}).\n"
              "# Use it: judge=" + Path(path).stem + "\n")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + OmegaConf.to_yaml(OmegaConf.create(fitted)), encoding="utf-8")
    return path
