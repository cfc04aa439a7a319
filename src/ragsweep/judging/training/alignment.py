"""Aligning the trained judge with people's labels: its model fine-tuned further on labelled claims.

The trained judge learns support from claims it makes from the corpus (`synthetic`), and errs where people's
sense of "supported" differs from its recipe's. Alignment continues training its model on people's labelled
claims, each supported claim paired with an unsupported one over the same passages where the labels allow
(the pair term of `pair_loss` then learns the one difference), mixed with as many of its own synthetic pairs so
it keeps what they taught (MLflow's judge alignment and ARES' fine-tuned judges likewise learn from the
labels of the domain they judge).

Labels come as a claims file (`labelled_claims`: a context of passages per claim) or as `ragsweep labels pull`
writes them (a `passage` per claim, the one its verdict named).
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragsweep.identity import fingerprint
from ragsweep.judging.calibration.labelled_claims import LabelledClaim, load_claims
from ragsweep.judging.training.synthetic import Example, make_examples

log = logging.getLogger(__name__)

PASSAGE_JOIN = "\n"


def load_alignment_claims(path: str | Path, documents: str | Path | None = None) -> list[LabelledClaim]:
    """A claims file, or a pulled labels file whose lines carry the claim's `passage`; both as claims."""
    path = Path(path)
    first = next((line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()), "{}") \
        if path.is_file() else "{}"
    try:
        pulled = "context" not in json.loads(first)
    except json.JSONDecodeError:
        pulled = False
    if not pulled:
        return load_claims(path, documents)
    claims = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row.get("passage"), str) or not row["passage"].strip() or row.get("label") not in (0, 1):
            raise ValueError(f"{path}, line {number}: a pulled label needs the claim's passage and a 0/1 label; pull "
                             "again with this version (ragsweep labels pull) or give a claims file with context")
        claims.append(LabelledClaim(f"{row['id']}/{number}", str(row.get("question", "")), (row["passage"],),
                                    str(row["claim"]), int(row["label"])))
    return claims


def claims_key(claims: Sequence[LabelledClaim]) -> str:
    """The labels' identity: what the aligned model learned from, so a model per set of labels."""
    return fingerprint("aligned-on", [(c.context, c.claim, c.label) for c in claims])


def alignment_pairs(claims: Sequence[LabelledClaim], seed: int = 0) -> list[Example]:
    """Supported and unsupported claims in turn, as `pair_loss` takes them: paired over the same passages first,
    then across passages; a claim left without a partner of the other label is used once more at random."""
    rng = random.Random(seed)
    by_context: dict[tuple[str, ...], tuple[list, list]] = defaultdict(lambda: ([], []))
    for claim in claims:
        by_context[claim.context][claim.label].append(claim)
    pairs, left = [], ([], [])
    for negatives, positives in by_context.values():
        rng.shuffle(positives)
        rng.shuffle(negatives)
        pairs += list(zip(positives, negatives))
        shared = min(len(positives), len(negatives))
        left[1].extend(positives[shared:])
        left[0].extend(negatives[shared:])
    rng.shuffle(left[0])
    rng.shuffle(left[1])
    pairs += list(zip(left[1], left[0]))
    rest_positive, rest_negative = left[1][len(left[0]):], left[0][len(left[1]):]
    pairs += [(claim, rng.choice([c for c in claims if c.label == 0])) for claim in rest_positive]
    pairs += [(rng.choice([c for c in claims if c.label == 1]), claim) for claim in rest_negative]
    return [_example(claim) for pair in pairs for claim in pair]


def _example(claim: LabelledClaim) -> Example:
    return Example(PASSAGE_JOIN.join(claim.context), claim.claim, claim.label, "labelled", claim.id)


def aligned_claims(aligned_on: Any) -> list[LabelledClaim]:
    """The trained judge's `aligned_on`: nothing, a claims file with text passages, or the claims themselves."""
    if aligned_on is None:
        return []
    claims = list(aligned_on) if isinstance(aligned_on, (list, tuple)) else load_claims(Path(str(aligned_on)))
    counts = [sum(claim.label == label for claim in claims) for label in (0, 1)]
    if min(counts) < 2:
        raise ValueError(f"judge.aligned_on: {counts[1]} supported and {counts[0]} unsupported claims; aligning needs "
                         "at least 2 of each")
    return claims


def align(base: Path, folder: Path, claims: Sequence[LabelledClaim], texts: Sequence[str], settings: Mapping[str, Any],
          threads: int | None, progress: bool) -> None:
    """Train the model in `base` further on `claims` (paired) and as many synthetic pairs of `texts`; save to
    `folder`, its `training.json` last."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from ragsweep.judging.training.pair_loss import fit_pairs

    started = time.perf_counter()
    torch.manual_seed(settings["seed"])
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(base)
    labelled = alignment_pairs(claims, settings["seed"])
    own = make_examples(texts, len(labelled), settings["seed"] + 1)
    log.info("aligning the trained judge with %d labelled claims (%d pairs) and %d of its own pairs",
             len(claims), len(labelled) // 2, len(own) // 2)
    losses = fit_pairs(model, tokenizer, labelled + own[: len(own) // 2 * 2], settings, progress, threads)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    record = {"aligned_from": base.name, "labelled_claims": len(claims), "settings": dict(settings),
              "seconds": round(time.perf_counter() - started, 1), "last_loss": round(sum(losses[-20:]) / 20, 4)
              if len(losses) >= 20 else None}
    (folder / "training.json").write_text(json.dumps(record, indent=1))


@dataclass(frozen=True)
class AlignmentReport:
    """What aligning bought: AUC on the labels before (the judge never saw them) and out of fold after, and on
    a held-out claims set over another corpus before and after aligning on every label."""

    labels: int
    folds: int
    before: float
    after: float
    threshold: float  # balanced-accuracy threshold on the out-of-fold scores
    heldout: str | None = None
    heldout_before: float | None = None
    heldout_after: float | None = None
    unscored: int = 0  # claim scorings whose every judge call failed, left out of the AUCs

    def table(self) -> str:
        lines = [f"  {'':<52}{'before':>8}{'after':>8}",
                 f"  {f'AUC on the {self.labels} labels (after: out of fold, {self.folds} folds)':<52}"
                 f"{self.before:>8.3f}{self.after:>8.3f}"]
        if self.heldout is not None:
            lines.append(f"  {'AUC held out on ' + Path(self.heldout).stem:<52}{self.heldout_before:>8.3f}"
                         f"{self.heldout_after:>8.3f}")
        if self.unscored:
            lines.append(f"  {self.unscored} claim scorings failed (every judge call of the claim) and are left out")
        return "\n".join(lines)


def measure_alignment(judge: Any, claims: Sequence[LabelledClaim], folds: int = 5,
                      heldout: tuple[str, Sequence[LabelledClaim]] | None = None) -> AlignmentReport:
    """Out-of-fold AUC of `judge.aligned` on `claims`, folds grouped by passages (claims over the same passages
    share a fold, so no fold is scored by a model that learned its passages' other claims), beside the unaligned
    judge's; and both on `heldout`."""
    from sklearn.model_selection import GroupKFold

    from ragsweep.judging.calibration.agreement import best_threshold

    contexts = {context: number for number, context in enumerate(dict.fromkeys(c.context for c in claims))}
    if len(contexts) < folds or folds < 2:
        raise ValueError(f"--folds {folds}: the labels cover {len(contexts)} distinct passages; give 2 to "
                         f"{len(contexts)} folds")
    unscored = []

    def scored_by(model: Any, which: Sequence[LabelledClaim]) -> list[float | None]:
        found = _scores(model, which)
        unscored.extend(score for score in found if score is None)
        return found

    out_of_fold: list[float | None] = [None] * len(claims)
    splits = GroupKFold(n_splits=folds).split(claims, groups=[contexts[c.context] for c in claims])
    for train, test in splits:
        scores = scored_by(judge.aligned([claims[i] for i in train]), [claims[i] for i in test])
        for index, score in zip(test, scores, strict=True):
            out_of_fold[index] = score
    labels = [claim.label for claim in claims]
    scored = [(label, score) for label, score in zip(labels, out_of_fold, strict=True) if score is not None]
    report = {"labels": len(claims), "folds": folds, "before": _auc(claims, scored_by(judge, claims)),
              "after": _auc(claims, out_of_fold),
              "threshold": best_threshold(np.array([y for y, _ in scored]), np.array([s for _, s in scored]))}
    if heldout is not None:
        name, other = heldout
        report.update(heldout=name, heldout_before=_auc(other, scored_by(judge, other)),
                      heldout_after=_auc(other, scored_by(judge.aligned(claims), other)))
    return AlignmentReport(**report, unscored=len(unscored))


def write_claims(path: Path, claims: Sequence[LabelledClaim]) -> Path:
    """The labels as a claims file with text passages (what `aligned_on` reads), whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text("".join(json.dumps({"id": c.id, "question": c.question, "context": list(c.context),
                                           "claim": c.claim, "label": c.label, "kind": c.kind}) + "\n"
                               for c in claims), encoding="utf-8")
    partial.replace(path)
    return path


def _scores(judge: Any, claims: Sequence[LabelledClaim]) -> list[float | None]:
    from ragsweep.judging.calibration.claim_scores import score_claims

    return [claim.score for claim in score_claims(judge, claims)[0]]


def _auc(claims: Sequence[LabelledClaim], scores: Sequence[float | None]) -> float:
    from sklearn.metrics import roc_auc_score

    kept = [(claim.label, score) for claim, score in zip(claims, scores, strict=True) if score is not None]
    return float(roc_auc_score([y for y, _ in kept], [s for _, s in kept]))
