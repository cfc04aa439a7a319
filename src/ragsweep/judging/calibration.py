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
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import balanced_accuracy_score, f1_score, roc_auc_score
from tqdm.auto import tqdm

from ragsweep.judging.base import VALIDATED_AUC, Judge, Pair, Verdict

log = logging.getLogger(__name__)

KEYS = ("id", "question", "context", "claim", "label")
BATCH_CLAIMS = 32  # claims per judge call: large enough for a batching backend, small enough for a live bar


def default_claims() -> Path:
    """The labelled sotu claims shipped with ragsweep (package data)."""
    return Path(str(resources.files("ragsweep.data") / "claims" / "sotu_claims.jsonl"))


def heldout_claims() -> Path:
    """The labelled claims over chroma_general's finance, pubmed and wikitexts corpora (package data): their
    passages are spans of those corpora, resolved from `HELDOUT_DOCUMENTS` under `paths.data`."""
    return Path(str(resources.files("ragsweep.data") / "claims" / "chroma_claims.jsonl"))


HELDOUT_DOCUMENTS = "chroma_general/corpora"  # under paths.data: the documents heldout_claims() cites


@dataclass(frozen=True)
class LabelledClaim:
    """One line of a claims file: `claim` is supported (label 1) or not (0) by `context` alone."""

    id: str
    question: str
    context: tuple[str, ...]
    claim: str
    label: int
    kind: str = ""


def load_claims(path: str | Path | None = None, documents: str | Path | None = None) -> list[LabelledClaim]:
    """Read a claims JSONL file (default: the shipped sotu set); blank lines are skipped. A passage is a text,
    or a span `{"doc_id", "start", "end"}` of the document `<documents>/<doc_id>.md` (or `.txt`), so a
    claims set can cite a corpus without copying it.

    Raises:
        ValueError: naming the file, the line, the key and the fix, for the first bad line.
    """
    path = Path(path) if path is not None else default_claims()
    if not path.is_file():
        raise ValueError(f"{path}: no such claims file; give --claims a JSONL file of "
                         '{"id", "question", "context": [passages], "claim", "label": 0|1, "kind"?} lines')
    claims, first_line, texts = [], {}, _Documents(documents)
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        claim = _parse(text, f"{path}, line {number}", texts)
        if claim.id in first_line:
            raise ValueError(f"{path}, line {number}: key 'id': {claim.id!r} is already the id of line "
                             f"{first_line[claim.id]}; give each claim its own id")
        first_line[claim.id] = number
        claims.append(claim)
    if not claims:
        raise ValueError(f"{path}: no claims in the file; write one JSON object per line")
    return claims


class _Documents:
    """The documents span passages cite, read once each from a folder."""

    def __init__(self, folder: str | Path | None) -> None:
        self.folder, self.texts = Path(folder) if folder is not None else None, {}

    def passage(self, span: dict, where: str) -> str:
        if set(span) != {"doc_id", "start", "end"} or not all(isinstance(span[k], int) and not isinstance(span[k], bool)
                                                               for k in ("start", "end")):
            raise ValueError(f"{where}: key 'context': a span passage is {{\"doc_id\", \"start\", \"end\"}} with "
                             f"integer offsets, got {span!r}")
        doc_id = str(span["doc_id"])
        if doc_id not in self.texts:
            if self.folder is None:
                raise ValueError(f"{where}: key 'context': passages are spans of document {doc_id!r}; give "
                                 "--documents FOLDER, the folder holding it as <doc_id>.md or .txt")
            found = [self.folder / f"{doc_id}{suffix}" for suffix in (".md", ".txt")
                     if (self.folder / f"{doc_id}{suffix}").is_file()]
            if not found:
                raise ValueError(f"{where}: key 'context': no {doc_id}.md or {doc_id}.txt in {self.folder}; point "
                                 "--documents (or paths.data) at the folder of the corpus these claims cite")
            self.texts[doc_id] = found[0].read_text(encoding="utf-8")
        document = self.texts[doc_id]
        if not 0 <= span["start"] < span["end"] <= len(document):
            raise ValueError(f"{where}: key 'context': span {span['start']}-{span['end']} lies outside {doc_id} "
                             f"({len(document)} characters); is --documents the corpus these claims were written on?")
        return document[span["start"]:span["end"]]


def _parse(text: str, where: str, documents: _Documents | None = None) -> LabelledClaim:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: not valid JSON ({error.msg} at column {error.colno}); "
                         "write one JSON object per line") from None
    if not isinstance(row, dict):
        raise ValueError(f"{where}: a line must be a JSON object with keys {', '.join(KEYS)}")
    for key in KEYS:
        if key not in row:
            raise ValueError(f"{where}: key '{key}' is missing; every line needs {', '.join(KEYS)} (kind optional)")
    if not isinstance(row["id"], (str, int)) or isinstance(row["id"], bool) or str(row["id"]) == "":
        raise ValueError(f"{where}: key 'id': must be a non-empty string, got {row['id']!r}")
    for key in ("question", "claim"):
        if not isinstance(row[key], str) or (key == "claim" and not row[key].strip()):
            raise ValueError(f"{where}: key '{key}': must be a{' non-empty' if key == 'claim' else ''} string, "
                             f"got {row[key]!r}")
    context = row["context"]
    if not isinstance(context, list) or not context:
        raise ValueError(f"{where}: key 'context': must be a non-empty list of passages, got {context!r}; "
                         "give at least one passage the claim is judged against")
    documents = documents or _Documents(None)
    context = [documents.passage(passage, where) if isinstance(passage, dict) else passage for passage in context]
    if not all(isinstance(passage, str) and passage.strip() for passage in context):
        raise ValueError(f"{where}: key 'context': every passage must be a non-empty string or a span "
                         '{"doc_id", "start", "end"}')
    if row["label"] not in (0, 1) or isinstance(row["label"], bool):
        raise ValueError(f"{where}: key 'label': must be 1 (the context supports the claim) or 0 (it does not), "
                         f"got {row['label']!r}")
    kind = row.get("kind") or ""
    if not isinstance(kind, str):
        raise ValueError(f"{where}: key 'kind': must be a string such as \"paraphrase\" or be left out, got {kind!r}")
    return LabelledClaim(str(row["id"]), row["question"], tuple(context), row["claim"], int(row["label"]), kind)


@dataclass(frozen=True)
class ClaimScore:
    """A judged claim: `score` is the best ok verdict over its passages; None when all of them failed."""

    id: str
    label: int
    kind: str
    score: float | None
    status: str  # "ok", or the first failed verdict's status when every verdict failed
    raw: str = ""  # what the judge said on a failed claim (first failure), for reading afterwards


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
            lines.append(f"  {kind.kind or '(none)':<24}{kind.n:>5}{label:>7}{_number(kind.auc):>8}"
                         f"{_number(kind.accuracy):>10}{kind.failures:>8}")
        lines.append("  (auc of a one-label kind: its claims against every claim of the other label; "
                     "accuracy: share right at the threshold)")
    if result.auc < 0.55:
        lines.append(f"note: an AUC of {result.auc:.2f} is chance or worse: this judge does not tell supported from "
                     "unsupported claims on this set, whatever its threshold")
    lines.append(f"use it: {use or f'judge={result.judge} judge.threshold={result.threshold} judge.auc={result.auc:.3f}'}")
    return "\n".join(lines)


def _number(value: float | None) -> str:
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
