"""`ragsweep calibrate`: agreement numbers worked by hand, failures kept out, bad files refused, the
JSON and the MLflow run written.

Until the project's judges land, a word-overlap judge written here (a real implementation of the
`Judge` protocol, `OVERLAP_JUDGE`) is what the CLI composes from a scratch project's conf/judge/.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from ragsweep.judging.base import Verdict
from ragsweep.judging.calibration.agreement import best_threshold, kind_breakdown
from ragsweep.judging.calibration.calibrate import calibrate
from ragsweep.judging.calibration.claim_scores import ClaimScore
from ragsweep.judging.calibration.labelled_claims import LabelledClaim, default_claims, heldout_claims, load_claims

OVERLAP_JUDGE = '''
import re
from ragsweep.judging.base import Verdict, check_threshold


class OverlapJudge:
    """Share of the claim's words that the passage contains; an error verdict for passages holding `fail_on`."""

    def __init__(self, threshold: float = 0.5, fail_on: str = "") -> None:
        check_threshold(threshold)
        self.threshold, self.fail_on = threshold, fail_on

    def judge(self, pairs):
        verdicts = []
        for pair in pairs:
            if self.fail_on and self.fail_on in pair.passage:
                verdicts.append(Verdict(None, "error", "passage refused"))
                continue
            words = set(re.findall(r"\\w+", pair.claim.lower()))
            found = words & set(re.findall(r"\\w+", pair.passage.lower()))
            verdicts.append(Verdict(len(found) / max(len(words), 1)))
        return verdicts


class CosineJudge:
    """Cosine of claim and passage embeddings, clipped to [0, 1], with the embedder a sweep would build."""

    def __init__(self, embedder, threshold: float = 0.5) -> None:
        self.embedder, self.threshold = embedder, threshold

    def judge(self, pairs):
        claims = self.embedder.encode([pair.claim for pair in pairs])
        passages = self.embedder.encode([pair.passage for pair in pairs])
        cosines = (claims * passages).sum(axis=1) / (
            (claims ** 2).sum(axis=1) ** 0.5 * (passages ** 2).sum(axis=1) ** 0.5)
        return [Verdict(float(min(max(value, 0.0), 1.0))) for value in cosines]
'''
SHARED = Path(__file__).resolve().parents[4] / "shared"
OVERLAP_YAML = "_target_: calib_overlap_judge.OverlapJudge\nthreshold: 0.5\nfail_on: ''\n"


@pytest.fixture
def overlap(tmp_path, monkeypatch):
    """The overlap judge's module, importable (by Hydra too) as `calib_overlap_judge`."""
    (tmp_path / "calib_overlap_judge.py").write_text(OVERLAP_JUDGE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("calib_overlap_judge", None)
    yield importlib.import_module("calib_overlap_judge")
    sys.modules.pop("calib_overlap_judge", None)


class TableJudge:
    """Scores each claim with the number given for it (a score None is a parse failure): hand-built scores."""

    threshold = 0.5

    def __init__(self, scores: dict[str, float | None]) -> None:
        self.scores = scores

    def judge(self, pairs):
        return [Verdict(None, "parse_failed", "no verdict") if self.scores[pair.claim] is None
                else Verdict(self.scores[pair.claim]) for pair in pairs]


def _claims(labels, scores, kinds=None):
    """Claims c0, c1, ... whose claim text is their id; the table judge scores them `scores`."""
    kinds = kinds or [""] * len(labels)
    claims = [LabelledClaim(f"c{i}", "q?", ("a passage",), f"c{i}", label, kind)
              for i, (label, kind) in enumerate(zip(labels, kinds))]
    return claims, TableJudge({f"c{i}": score for i, score in enumerate(scores)})


def test_perfect_separation():
    claims, judge = _claims([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9])
    result = calibrate(judge, claims)
    assert (result.auc, result.balanced_accuracy, result.f1) == (1.0, 1.0, 1.0)
    assert result.threshold == 0.5  # the middle of the gap (0.2, 0.8]


def test_reversed_scores():
    # every cut scores balanced accuracy <= 0.5; "all supported" (0.0) and "none" (above 0.9) tie at 0.5,
    # the lower middle of the two is taken
    claims, judge = _claims([1, 1, 0, 0], [0.1, 0.2, 0.8, 0.9])
    result = calibrate(judge, claims)
    assert (result.auc, result.balanced_accuracy, result.threshold) == (0.0, 0.5, 0.0)


def test_small_example_worked_by_hand():
    # positives 0.9, 0.6, 0.4; negatives 0.7, 0.3, 0.2. AUC: 0.9 beats 3 negatives, 0.6 and 0.4 beat 2 each: 7/9.
    # Cuts (levels below the cut unsupported): 0.5, 0.667, 0.833 (below 0.4), 0.667, 0.5, 0.667, 0.5 -> the cut
    # in (0.3, 0.4], threshold 0.35; there TPR 3/3, TNR 2/3 -> BA 5/6; TP 3, FP 1 (0.7), FN 0 -> F1 6/7
    claims, judge = _claims([1, 1, 1, 0, 0, 0], [0.9, 0.6, 0.4, 0.7, 0.3, 0.2])
    result = calibrate(judge, claims)
    assert result.auc == pytest.approx(7 / 9)
    assert result.threshold == 0.35
    assert result.balanced_accuracy == pytest.approx(5 / 6)
    assert result.f1 == pytest.approx(6 / 7)


def test_tied_cuts_take_the_middle_one():
    # n p n p n p at 0.1 ... 0.6: cuts below 0.2, 0.4 and 0.6 all reach BA 2/3; the middle, in (0.3, 0.4], wins
    assert best_threshold(np.array([0, 1, 0, 1, 0, 1]), np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])) == 0.35


def test_a_top_score_of_one_still_gets_a_threshold_in_range():
    assert best_threshold(np.array([1, 0]), np.array([0.0, 1.0])) == 0.0  # no t <= 1 marks a score of 1 unsupported
    assert best_threshold(np.array([0, 1]), np.array([0.0, 1.0])) == 0.5


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 20)), min_size=2, max_size=40)
       .filter(lambda rows: len({label for label, _ in rows}) == 2))
def test_threshold_reaches_the_best_balanced_accuracy_of_any_cut(rows):
    labels = np.array([int(label) for label, _ in rows])
    scores = np.array([value / 20 for _, value in rows])  # many ties, and 0 and 1 themselves
    threshold = best_threshold(labels, scores)
    assert 0.0 <= threshold <= 1.0
    every_cut = [balanced_accuracy_score(labels, scores >= t) for t in [*np.unique(scores), 1.0]]
    assert balanced_accuracy_score(labels, scores >= threshold) == pytest.approx(max(every_cut))


def test_failed_claims_are_counted_and_left_out():
    # c2 (a negative) fails on every passage: were it scored 0 it would sit below every positive and lift AUC
    claims, judge = _claims([1, 1, 0, 0, 0], [0.9, 0.4, None, 0.6, 0.3])
    result = calibrate(judge, claims)
    assert (result.n, result.failures, result.failure_rate, result.verdict_failure_rate) == (5, 1, 0.2, 0.2)
    assert result.auc == pytest.approx(roc_auc_score([1, 1, 0, 0], [0.9, 0.4, 0.6, 0.3]))  # 3/4
    failed = result.to_dict()["claims"][2]
    assert failed == {"id": "c2", "label": 0, "kind": "", "score": None, "status": "parse_failed", "raw": "no verdict"}


def test_a_claim_keeps_the_best_of_its_ok_passages(overlap):
    judge = overlap.OverlapJudge(fail_on="REFUSE")
    claims = [LabelledClaim("a", "q", ("REFUSE the cat sat", "the cat sat"), "the cat sat", 1),
              LabelledClaim("b", "q", ("REFUSE", "REFUSE too"), "dogs bark", 0),
              LabelledClaim("c", "q", ("the dog",), "the cat sat", 0)]
    result = calibrate(judge, claims, name="overlap")
    assert [(c.score, c.status) for c in result.claims] == [(1.0, "ok"), (None, "error"), (1 / 3, "ok")]
    assert (result.failures, result.verdict_failure_rate) == (1, 3 / 5)
    assert result.auc == 1.0


def test_per_kind_breakdown():
    # positives: paraphrase 0.9, 0.5; negatives: negation 0.6, 0.2; mixed: (1, 0.7) and (0, 0.1)
    labels = [1, 1, 0, 0, 1, 0]
    scores = [0.9, 0.5, 0.6, 0.2, 0.7, 0.1]
    kinds = ["paraphrase", "paraphrase", "negation", "negation", "mixed", "mixed"]
    claims, judge = _claims(labels, scores, kinds)
    result = calibrate(judge, claims)
    # levels .1n .2n .5p .6n .7p .9p; BA per cut (levels below it unsupported): 1/2, 2/3, 5/6 (in (0.2, 0.5]:
    # TPR 1, TNR 2/3), 2/3, 5/6 (in (0.6, 0.7]: TPR 2/3, TNR 1), 2/3, 1/2. Of the two tied cuts the lower middle
    # is the first; its midpoint 0.35 has the 1-digit neighbour 0.3 inside (0.2, 0.5] -> threshold 0.3
    assert result.threshold == 0.3
    kinds_found = {kind.kind: kind for kind in result.kinds}
    paraphrase, negation, mixed = kinds_found["paraphrase"], kinds_found["negation"], kinds_found["mixed"]
    assert (paraphrase.label, paraphrase.accuracy) == (1, 1.0)  # 0.9 and 0.5 both >= 0.3
    # paraphrase against every negative (0.6, 0.2, 0.1): 0.9 beats 3, 0.5 beats 2 -> 5/6
    assert paraphrase.auc == pytest.approx(5 / 6)
    assert paraphrase.auc_against == "all label-0 claims"
    # negation: 0.6 wrongly supported, 0.2 right -> 1/2; against positives 0.9, 0.5, 0.7: 0.6 is below 2 of 3
    # and 0.2 below all 3 -> 5 of 6 pairs ranked right
    assert (negation.label, negation.accuracy, negation.auc) == (0, 0.5, pytest.approx(5 / 6))
    assert (mixed.label, mixed.auc, mixed.auc_against, mixed.balanced_accuracy) == (None, 1.0, "within the kind", 1.0)


def test_kind_breakdown_counts_failures_and_handles_a_kind_with_no_scores():
    scored = [ClaimScore("a", 1, "x", 0.8, "ok"), ClaimScore("b", 0, "y", 0.1, "ok"),
              ClaimScore("c", 0, "z", None, "error")]
    x, y, z = kind_breakdown(scored, 0.5)  # supported kinds first, then unsupported ones
    assert (x.kind, y.kind, z.kind) == ("x", "y", "z")
    assert (z.n, z.failures, z.label, z.auc, z.accuracy) == (1, 1, 0, None, None)
    assert (x.auc, x.accuracy, y.auc, y.accuracy) == (1.0, 1.0, 1.0, 1.0)


def test_only_one_label_scored_is_refused():
    claims, judge = _claims([1, 0], [0.9, None])
    with pytest.raises(ValueError, match="only label 1"):
        calibrate(judge, claims)


def test_a_judge_returning_too_few_verdicts_is_refused():
    class Short(TableJudge):
        def judge(self, pairs):
            return super().judge(pairs)[1:]

    claims, _ = _claims([1, 0], [0.9, 0.1])
    with pytest.raises(ValueError, match="returned 1 verdicts for 2 pairs"):
        calibrate(Short({"c0": 0.9, "c1": 0.1}), claims)


def test_the_shipped_claims_load():
    claims = load_claims()
    assert default_claims().name == "sotu_claims.jsonl"
    assert len(claims) >= 200 and {claim.label for claim in claims} == {0, 1}
    assert all(claim.context and claim.kind for claim in claims)


GOOD = {"id": "x1", "question": "q?", "context": ["p"], "claim": "c", "label": 1, "kind": "paraphrase"}


@pytest.mark.parametrize(("line", "key", "fix"), [
    ('{"id": "x2", "claim": ', None, "one JSON object per line"),
    ('["x2"]', None, "must be a JSON object"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "claim"} | {"id": "x2"}), "'claim' is missing", "needs id"),
    (json.dumps(GOOD | {"id": "x2", "label": 2}), "'label'", "must be 1 (the context supports the claim) or 0"),
    (json.dumps(GOOD | {"id": "x2", "label": True}), "'label'", "must be 1"),
    (json.dumps(GOOD | {"id": "x2", "context": []}), "'context'", "give at least one passage"),
    (json.dumps(GOOD | {"id": "x2", "context": "p"}), "'context'", "non-empty list"),
    (json.dumps(GOOD | {"id": "x2", "context": ["p", ""]}), "'context'", "every passage must be a non-empty"),
    (json.dumps(GOOD | {"id": "x2", "claim": " "}), "'claim'", "non-empty string"),
    (json.dumps(GOOD | {"id": "x2", "kind": 3}), "'kind'", "be left out"),
    (json.dumps(GOOD), "'id'", "already the id of line 1; give each claim its own id"),
])
def test_bad_lines_name_the_file_line_key_and_fix(tmp_path, line, key, fix):
    path = tmp_path / "claims.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + line + "\n")  # line 2 is blank (skipped): the bad one is line 3
    with pytest.raises(ValueError) as error:
        load_claims(path)
    message = str(error.value)
    assert message.startswith(f"{path}, line 3: ")
    assert fix in message
    if key:
        assert f"key {key}" in message


def test_missing_and_empty_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match="no such claims file"):
        load_claims(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="no claims in the file"):
        load_claims(tmp_path / "empty.jsonl")


# ---- the command, as a user runs it in a project folder ----------------------------------------------

CLI_CLAIMS = [  # the overlap judge ranks every positive above every negative here except n2 (all its words)
    {"id": "p1", "question": "q", "context": ["The cat sat on the mat."], "claim": "The cat sat.", "label": 1,
     "kind": "verbatim"},
    {"id": "p2", "question": "q", "context": ["Dogs bark at night.", "Birds sing."], "claim": "Dogs bark.",
     "label": 1, "kind": "verbatim"},
    {"id": "n1", "question": "q", "context": ["The cat sat on the mat."], "claim": "A lion roared loudly.",
     "label": 0, "kind": "invented_detail"},
    {"id": "n2", "question": "q", "context": ["Dogs bark at night."], "claim": "Dogs bark at night.", "label": 0,
     "kind": "negation"},
    {"id": "n3", "question": "q", "context": ["Birds sing."], "claim": "Fish swim far.", "label": 0,
     "kind": "negation"},
]


@pytest.fixture
def project(tmp_path, scratch_project, overlap, monkeypatch):
    """A scratch project with the test judges beside the shipped ones, and a claims file; cwd is the project."""
    folder = scratch_project(tmp_path / "project")
    (tmp_path / "shared").symlink_to(SHARED)  # beside the project, as ../shared is beside a checkout
    (folder / "conf" / "judge" / "overlap.yaml").write_text(OVERLAP_YAML)
    (folder / "conf" / "judge" / "cosine.yaml").write_text("_target_: calib_overlap_judge.CosineJudge\n")
    (folder / "claims.jsonl").write_text("".join(json.dumps(row) + "\n" for row in CLI_CLAIMS))
    monkeypatch.chdir(folder)
    return folder


def test_calibrate_prints_writes_and_logs(project, capsys):
    import mlflow

    from ragsweep.cli import main

    uri = f"sqlite:///{project}/store/mlflow.db"
    code = main(["--tracking-uri", uri, "calibrate", "--judge", "overlap", "--claims", "claims.jsonl",
                 "--heldout", "none", "judge.fail_on=Birds"])
    out = capsys.readouterr().out
    assert code == 0, out
    # p2's "Birds sing." passage fails, its other passage holds both its words -> 1.0; n3 has only that
    # passage -> a failed claim. Scored: p1 1.0, p2 1.0, n1 0.0, n2 1.0 -> AUC (2 * 1 + 2 * 0.5) / 4 = 0.75
    written = json.loads((project / "calibration" / "overlap.json").read_text())
    assert written["auc"] == 0.75 and written["failures"] == 1 and written["n"] == 5
    assert written["config"]["fail_on"] == "Birds"
    assert [(c["id"], c["status"]) for c in written["claims"]][-1] == ("n3", "error")
    assert "ROC AUC            0.750" in out
    assert f"use it: judge=overlap judge.threshold={written['threshold']} judge.auc=0.750" in out
    assert "verbatim" in out and "negation" in out

    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["calibration"], output_format="list")
    assert [run.info.run_name for run in runs] == ["overlap"]
    run = runs[0]
    assert run.data.metrics["auc"] == 0.75 and run.data.metrics["failure_rate"] == 0.2
    assert run.data.metrics["accuracy_verbatim"] == 1.0
    assert float(run.data.params["threshold"]) == written["threshold"]
    assert run.data.params["judge.fail_on"] == "Birds"
    artifact = Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="overlap.json",
                                                        dst_path=str(project / "download")))
    assert json.loads(artifact.read_text()) == written

    code = main(["--tracking-uri", uri, "calibrate", "--judge", "overlap", "--claims", "claims.jsonl", "--limit", "3",
                 "--heldout", "none", "--out", "elsewhere"])
    assert code == 0
    assert json.loads((project / "elsewhere" / "overlap.json").read_text())["n"] == 3
    assert len(mlflow.search_runs(experiment_names=["calibration"], output_format="list")) == 2  # one run each

    # a shipped judge on the shipped claims: AUC as sklearn computes it from lexical coverage, max over passages
    from ragsweep.judging.lexical import coverage

    assert main(["--tracking-uri", uri, "calibrate", "--judge", "lexical"]) == 0
    out = capsys.readouterr().out
    written = json.loads((project / "calibration" / "lexical.json").read_text())
    claims = load_claims()
    expected = roc_auc_score([c.label for c in claims], [max(coverage(c.claim, p) for p in c.context) for c in claims])
    assert (written["n"], written["auc"]) == (len(claims), pytest.approx(expected))
    assert written["config"]["max_failure_rate"] == 0.05  # runner keys recorded, not passed to the judge
    # held out: the threshold fitted on the sotu claims, measured on the chroma_general claims, and back
    other = load_claims(heldout_claims(), SHARED / "data" / "chroma_general" / "corpora")
    scores = [max(coverage(c.claim, p) for p in c.context) for c in other]
    labels = [c.label for c in other]
    to_other, back = written["held_out"]["directions"]
    assert (to_other["n"], to_other["auc"]) == (len(other), pytest.approx(roc_auc_score(labels, scores)))
    assert to_other["balanced_accuracy"] == pytest.approx(
        balanced_accuracy_score(labels, [score >= written["threshold"] for score in scores]))
    assert back["auc"] == pytest.approx(expected) and back["threshold"] == written["held_out"]["other_set"]["threshold"]
    assert written["held_out"]["auc"] == pytest.approx(min(expected, roc_auc_score(labels, scores)))
    assert "in sample (fitted and measured on the same set; flatters the judge)" in out
    assert (f"use it: judge=lexical judge.threshold={written['threshold']} judge.auc={written['held_out']['auc']:.3f}"
            in out)
    assert out.index("held-out AUC (the lower)") < out.index("in sample, per kind")
    held = mlflow.search_runs(experiment_names=["calibration"], output_format="list")[0]
    assert held.data.metrics["heldout_auc"] == pytest.approx(written["held_out"]["auc"])


@pytest.mark.parametrize(("args", "message"), [
    (["--judge", "entail"], "--judge entail: there is no "),
    (["--judge", "none"], "--judge none turns judging off, so there is nothing to calibrate; choose one of cosine, embedding, ensemble, lexical, likelihood, llm, nli, overlap, trained, trained_mpnet"),
    (["--judge", "overlap", "--claims", "missing.jsonl"], "missing.jsonl: no such claims file"),
    (["--judge", "overlap", "--claims", "bad.jsonl"], "bad.jsonl, line 1: key 'label'"),
    (["--judge", "overlap", "--claims", "claims.jsonl", "judge.thresold=0.3"], "Could not override 'judge.thresold'"),
    (["--judge", "overlap", "--claims", "claims.jsonl", "judge.threshold=2"], "judge.threshold must be a number"),
    (["--judge", "overlap", "--claims", "claims.jsonl", "--limit", "0"], "--limit 0: give the number"),
    (["--judge", "overlap", "--claims", "claims.jsonl", "--limit", "1"], "only label 1"),
])
def test_bad_input_exits_2_with_one_line(project, capsys, args, message):
    from ragsweep.cli import main

    (project / "bad.jsonl").write_text(json.dumps(GOOD | {"label": "yes"}) + "\n")
    before = sorted(project.rglob("*"))
    code = main(["--tracking-uri", f"sqlite:///{project}/store/mlflow.db", "calibrate", *args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("ragsweep: error: ") and err.count("\n") == 1, err
    assert message in err
    assert sorted(project.rglob("*")) == before  # no calibration/, no store, no cache entry
    if "entail" in args:
        assert "choose one of cosine, embedding, ensemble, lexical, likelihood, llm, nli, overlap, trained, trained_mpnet" in err  # the available judges, `none` left out


def test_a_judge_that_asks_for_an_embedder_gets_the_configs(project):
    """As a sweep hands a reranker its embedder: `embedder=...` of the project's config, built, and not
    cached, so that seconds per claim measure the judge."""
    from ragsweep.runner.standalone_judges import build_judge

    judge, config = build_judge(project / "conf", "cosine", ["embedder.progress=false"])
    assert type(judge.embedder).__name__ == "MiniLMEmbedder" and judge.embedder.progress is False
    claims = load_claims(project / "claims.jsonl")
    result = calibrate(judge, claims, "cosine")
    assert result.n == 5 and result.failures == 0

    def clipped_cosine(claim: str, passage: str) -> float:
        a, b = judge.embedder.encode([claim, passage])
        return min(max(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)), 0.0), 1.0)

    best = [max(clipped_cosine(c.claim, passage) for passage in c.context) for c in claims]
    assert result.auc == pytest.approx(roc_auc_score([c.label for c in claims], best))
    # each supported claim ranks above n1 and n3 and below n2, which repeats its passage word for word
    # (cosine 1): 4 of 6 pairs ranked right
    assert result.auc == pytest.approx(2 / 3)
    assert config == {"_target_": "calib_overlap_judge.CosineJudge"}
    assert not (project / ".cache").exists()


class SignJudge:
    """Word overlap or its complement, whichever ranks the claims it is fitted on better: a fitted judge whose
    held-out figures must come from the other set's fit."""

    threshold = 0.5

    def __init__(self) -> None:
        self.flip = False

    def _overlap(self, pair) -> float:
        words = set(pair.claim.lower().split())
        return len(words & set(pair.passage.lower().split())) / max(len(words), 1)

    def judge(self, pairs):
        return [Verdict(1 - self._overlap(p) if self.flip else self._overlap(p)) for p in pairs]

    def fit(self, claims):
        from ragsweep.judging.calibration.claim_scores import score_claims

        aucs = {}
        for flip in (False, True):
            self.flip = flip
            scored = score_claims(self, claims)[0]
            aucs[flip] = roc_auc_score([c.label for c in scored], [c.score for c in scored])
        self.flip = aucs[True] > aucs[False]
        return score_claims(self, claims)


def _claim(i: int, label: int, claim: str, passage: str) -> LabelledClaim:
    return LabelledClaim(str(i), "q", (passage,), claim, label)


def test_held_out_figures_use_the_other_sets_fit_both_ways():
    from ragsweep.judging.calibration.calibrate import cross_corpus

    copying = [_claim(0, 1, "a b", "a b c"), _claim(1, 1, "c d", "c d"), _claim(2, 0, "x y", "a b"),
               _claim(3, 0, "z w", "c d")]  # supported claims copy their passage
    inverted = [_claim(4, 0, "a b", "a b c"), _claim(5, 0, "c d", "c d"), _claim(6, 1, "x y", "a b"),
                _claim(7, 1, "z w", "c d")]  # here the copies are the unsupported ones
    judge = SignJudge()
    result = cross_corpus(judge, [("copying", copying), ("inverted", inverted)], "sign")
    assert [c.auc for c in result.in_sample] == [1.0, 1.0]  # each set, fitted on itself
    assert [(h.fitted_on, h.tested_on, h.auc) for h in result.held_out] == [("copying", "inverted", 0.0),
                                                                            ("inverted", "copying", 0.0)]
    assert result.auc == 0.0 and judge.flip is False  # left fitted on the first set, as shipped
    scores = {"c0": 0.9, "c1": 0.8, "c2": 0.1, "c3": 0.7, "c4": 0.2, "c5": 0.3, "c6": 0.6, "c7": 0.1}
    first = [LabelledClaim(f"c{i}", "q", ("p",), f"c{i}", label) for i, label in enumerate([1, 1, 0, 0])]
    second = [LabelledClaim(f"c{i}", "q", ("p",), f"c{i}", label) for i, label in enumerate([0, 0, 1, 1], start=4)]
    plain = cross_corpus(TableJudge(scores), [("a", first), ("b", second)])
    (to_b, to_a) = plain.held_out
    assert to_b.auc == roc_auc_score([0, 0, 1, 1], [0.2, 0.3, 0.6, 0.1])  # no fitted weights: only the threshold moves
    assert to_b.threshold == plain.in_sample[0].threshold and to_a.threshold == plain.in_sample[1].threshold
    assert to_b.balanced_accuracy == balanced_accuracy_score([0, 0, 1, 1], np.array([0.2, 0.3, 0.6, 0.1]) >= to_b.threshold)
