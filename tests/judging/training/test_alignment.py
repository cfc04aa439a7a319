"""Aligning the trained judge with labelled claims: how labels are paired, and `ragsweep align-judge` on a real
(tiny) MiniLM fine-tuning, from the labels to a judge option a sweep can use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragsweep.judging.training.alignment import alignment_pairs, load_alignment_claims, measure_alignment
from ragsweep.judging.base import Verdict
from ragsweep.judging.calibration.labelled_claims import LabelledClaim, load_claims

RAGSWEEP = Path(sys.executable).with_name("ragsweep")
TINY = ("judge.examples=16", "judge.max_length=128", "judge.train_batch_size=8", "judge.threads=1",
        "judge.progress=false", "+judge.align_epochs=1")


def _claim(number: int, context: str, label: int) -> LabelledClaim:
    return LabelledClaim(f"c{number}", "", (context,), f"claim {number}", label)


def test_labels_are_paired_over_the_same_passages_first():
    claims = [_claim(1, "a", 1), _claim(2, "b", 0), _claim(3, "a", 0), _claim(4, "b", 1), _claim(5, "c", 1)]
    examples = alignment_pairs(claims)
    assert [e.label for e in examples] == [1, 0] * 3  # supported first in each pair, as pair_loss reads them
    pairs = {(examples[i].source, examples[i + 1].source) for i in range(0, len(examples), 2)}
    assert {("c1", "c3"), ("c4", "c2")} <= pairs  # same passages paired together
    assert next(b for a, b in pairs if a == "c5") in {"c2", "c3"}  # the one left over meets another passage's


def test_pulled_labels_become_claims_over_their_passage(tmp_path):
    pulled = tmp_path / "labels.jsonl"
    pulled.write_text(json.dumps({"id": "q1", "claim": "It rained.", "label": 1, "passage": "Rain fell all day."})
                      + "\n")
    (claim,) = load_alignment_claims(pulled)
    assert (claim.context, claim.claim, claim.label) == (("Rain fell all day.",), "It rained.", 1)
    pulled.write_text(json.dumps({"id": "q1", "claim": "It rained.", "label": 1}) + "\n")
    with pytest.raises(ValueError, match="line 1: a pulled label needs the claim's passage"):
        load_alignment_claims(pulled)


def _subset(path: Path, claims: list[LabelledClaim]) -> Path:
    path.write_text("".join(json.dumps({"id": c.id, "question": c.question, "context": list(c.context),
                                        "claim": c.claim, "label": c.label, "kind": c.kind}) + "\n" for c in claims))
    return path


def _align(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(RAGSWEEP), "align-judge", *args, *TINY], cwd=project, text=True, capture_output=True,
                          timeout=900)


def test_align_judge_reports_before_and_after_and_writes_a_judge_to_use(tmp_path):
    project = tmp_path / "project"  # as `ragsweep init` writes it: no conf/judge/ of its own
    subprocess.run([str(RAGSWEEP), "init", str(project)], check=True, capture_output=True, timeout=60)
    sotu = load_claims()
    contexts = list(dict.fromkeys(claim.context for claim in sotu))
    labels = _subset(tmp_path / "labels.jsonl", [c for c in sotu if c.context in contexts[:4]])
    heldout = _subset(tmp_path / "heldout.jsonl", [c for c in sotu if c.context in contexts[10:12]])
    done = _align(project, "--labels", str(labels), "--heldout", str(heldout), "--folds", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "before   after" in done.stdout and "out of fold, 2 folds" in done.stdout
    assert "AUC held out on heldout" in done.stdout and "use judge=aligned" in done.stdout
    written = (project / "conf" / "judge" / "aligned.yaml").read_text()
    assert "aligned_on: ${paths.root}/judges/aligned.jsonl" in written and "# AUC on them" in written
    assert len(load_claims(project / "judges" / "aligned.jsonl")) == len(load_claims(labels))

    from ragsweep.runner.standalone_judges import build_judge

    judge, config = build_judge(project / "conf", "aligned", TINY[:-1], load_claims(labels) + load_claims(heldout),
                                project)
    assert config["aligned_on"].endswith("judges/aligned.jsonl") and judge.path != judge.base_path
    assert (judge.path / "training.json").is_file()  # the judge the option names is the one measured, kept
    assert json.loads((judge.path / "training.json").read_text())["aligned_from"] == judge.base_path.name


def test_too_few_labels_of_a_class_is_one_line_and_writes_nothing(tmp_path, scratch_project):
    project = scratch_project(tmp_path / "project")
    sotu = load_claims()
    labels = _subset(tmp_path / "labels.jsonl", [c for c in sotu if c.label == 1][:6] + [c for c in sotu if not c.label][:1])
    done = _align(project, "--labels", str(labels), "--heldout", "none", "--folds", "2")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "6 supported and 1 unsupported claims; aligning needs at least 2 of each" in done.stderr  # before any work
    assert not (project / "conf" / "judge" / "aligned.yaml").exists() and not (project / "judges").exists()


def test_a_judge_that_cannot_be_aligned_is_refused(tmp_path, scratch_project):
    project = scratch_project(tmp_path / "project")
    labels = _subset(tmp_path / "labels.jsonl", load_claims()[:12])
    done = subprocess.run([str(RAGSWEEP), "align-judge", "--judge", "lexical", "--labels", str(labels), "--heldout",
                           "none", "--folds", "2"], cwd=project, text=True, capture_output=True, timeout=300)
    assert done.returncode == 2 and "--judge lexical: LexicalJudge cannot be aligned" in done.stderr
    assert not (project / "conf" / "judge" / "aligned.yaml").exists()


class _Keyword:
    """A stand-in judge, aligned or not: a claim saying "true" scores 1, others 0, and one saying "broken" fails."""

    threshold = 0.5

    def aligned(self, claims):
        return self

    def judge(self, pairs):
        return [Verdict(None, "error", "down") if "broken" in pair.claim else Verdict(float("true" in pair.claim), "ok",
                                                                                      "") for pair in pairs]


def test_claims_whose_scoring_failed_are_counted_not_scored():
    claims = [LabelledClaim(f"c{n}", "", (f"passage {n % 4}",), f"{'true' if n % 2 else 'false'} claim {n}", n % 2)
              for n in range(8)]
    claims[2] = LabelledClaim("c2", "", ("passage 2",), "broken claim", 0)
    report = measure_alignment(_Keyword(), claims, folds=2)
    assert (report.before, report.after) == (1.0, 1.0)
    assert report.unscored == 2  # once before, once out of fold
    assert "2 claim scorings failed" in report.table()
