"""The ensemble judge: its score worked by hand, failures kept, bad settings named, refused unfitted in a sweep,
fitted by `ragsweep calibrate` (out-of-fold AUC) into a judge option that a sweep builds. Real member judges only."""

from __future__ import annotations

import json
import math
import random
import re

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from sklearn.metrics import roc_auc_score

from ragsweep.identity import fingerprint
from ragsweep.judging.base import Pair
from ragsweep.judging.calibration.labelled_claims import load_claims
from ragsweep.judging.embedding import EmbeddingJudge
from ragsweep.judging.ensemble import EnsembleJudge
from ragsweep.judging.lexical import LexicalJudge
from ragsweep.judging.trained import TrainedJudge
from ragsweep.runner.build import ConfigError, build


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_score_is_the_logistic_of_the_weighted_member_scores():
    # claim terms: budget, grew, percen(t) and the number 12; the passage holds budget and grew.
    # two (number weight 2): 2 / (3 + 2) = 0.4; one (number weight 1): 2 / (3 + 1) = 0.5
    judge = EnsembleJudge({"two": LexicalJudge(number_weight=2.0), "one": LexicalJudge(number_weight=1.0)},
                          weights={"two": 2.0, "one": -1.0}, bias=0.5)
    [verdict] = judge.judge([Pair("The budget grew 12 percent.", "The budget grew.")])
    assert verdict.ok and verdict.score == pytest.approx(_sigmoid(0.5 + 2 * 0.4 - 1 * 0.5))  # 0.6900


def test_an_embedding_member_enters_with_its_own_score():
    from ragsweep.embedding.minilm import MiniLMEmbedder

    embedding = EmbeddingJudge(MiniLMEmbedder(progress=False))
    judge = EnsembleJudge({"lexical": LexicalJudge(), "embedding": embedding},
                          weights={"lexical": 1.5, "embedding": -3.0}, bias=0.2)
    pairs = [Pair("Exports rose sharply.", "Exports rose sharply last year."), Pair("Cats purr.", "Tax rates fell.")]
    alone = [v.score for v in embedding.judge(pairs)]
    lexical = [v.score for v in LexicalJudge().judge(pairs)]
    got = [v.score for v in judge.judge(pairs)]
    assert got == pytest.approx([_sigmoid(0.2 + 1.5 * lex - 3.0 * emb) for lex, emb in zip(lexical, alone)])
    assert got[0] != pytest.approx(got[1])


def test_a_failed_member_fails_the_verdict_and_is_named():
    # a trained judge without a corpus fails every pair (it never trains): the ensemble must not score 0
    judge = EnsembleJudge({"lexical": LexicalJudge(), "trained": TrainedJudge(progress=False)},
                          weights={"lexical": 1.0, "trained": 1.0})
    verdicts = judge.judge([Pair("The budget grew.", "The budget grew."), Pair("x y z", "a b c")])
    assert [v.status for v in verdicts] == ["error", "error"]
    assert all(v.score is None and v.raw.startswith("member trained: ValueError: judge.dataset") for v in verdicts)


def test_an_unfitted_ensemble_fails_its_verdicts_and_its_model_key():
    judge = EnsembleJudge({"lexical": LexicalJudge()})
    [verdict] = judge.judge([Pair("a claim here", "a claim here")])
    assert verdict.status == "error" and "ragsweep calibrate --judge ensemble" in verdict.raw
    with pytest.raises(ValueError, match=r"judge.weights is null.*ragsweep calibrate --judge ensemble"):
        judge.model_key  # noqa: B018


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"members": {}}, r"judge.members must name at least one judge"),
    ({"members": {"lex": "lexical"}}, r"judge.members.lex: str is not a judge"),
    ({"members": {"lex": LexicalJudge()}, "weights": {"lex": 1.0, "nli": 2.0}},
     r"judge.weights must give one weight per member .*no member named nli"),
    ({"members": {"lex": LexicalJudge(), "w": LexicalJudge()}, "weights": {"lex": 1.0}},
     r"judge.weights .*no weight for w.*ragsweep calibrate --judge ensemble"),
    ({"members": {"lex": LexicalJudge()}, "weights": {"lex": "high"}}, r"judge.weights.lex must be a finite number"),
    ({"members": {"lex": LexicalJudge()}, "bias": float("nan")}, r"judge.bias must be a finite number"),
    ({"members": {"lex": LexicalJudge()}, "threshold": 2.0}, r"judge.threshold must be a number in \[0, 1\]"),
])
def test_bad_settings_name_the_key(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EnsembleJudge(**kwargs)


def test_the_dataset_reaches_a_trained_member_and_names_the_model(tmp_path):
    texts = ["The council spent 40 dollars on roads in 2019.", "Rain fell for nine days in March.",
             "The mayor opened a new library downtown.", "Exports of wheat doubled last year."]
    trained = TrainedJudge(examples=8, max_length=64, progress=False, threads=1, cache_dir=str(tmp_path))
    given = TrainedJudge(dataset=["other corpus"], examples=8, progress=False, cache_dir=str(tmp_path))
    judge = EnsembleJudge({"lexical": LexicalJudge(), "trained": trained, "given": given},
                          weights={"lexical": 0.5, "trained": 1.0, "given": 0.0}, dataset=texts)
    assert trained.dataset is texts and given.dataset == ["other corpus"]  # a member's own corpus is kept
    assert judge.model_key == fingerprint("ensemble-judge", {"trained": trained.model_key, "given": given.model_key})
    assert EnsembleJudge({"lexical": LexicalJudge()}, weights={"lexical": 1.0}).model_key is None
    judge.members.pop("given"), judge.weights.pop("given")
    judge.preflight()  # trains the tiny model: one step
    assert (trained.path / "training.json").is_file()
    verdicts = judge.judge([Pair("The council spent 40 dollars on roads.", texts[0])])
    expected = _sigmoid(0.5 * LexicalJudge().judge([Pair("The council spent 40 dollars on roads.", texts[0])])[0].score
                        + trained.judge([Pair("The council spent 40 dollars on roads.", texts[0])])[0].score)
    assert verdicts[0].ok and verdicts[0].score == pytest.approx(expected, abs=1e-6)


# Two lexical members that read different halves of the same claims: `numbers` (a number weighs 100 words)
# decides by the spent sum, which sets the label; `words` (a number weighs 0.01 words) sees an unrelated
# extra word added at random to half the claims: noise. Four labels are flipped so no judge is perfect.
UNFITTED = """_target_: ragsweep.judging.ensemble.EnsembleJudge
members:
  numbers: {_target_: ragsweep.judging.lexical.LexicalJudge, number_weight: 100.0}
  words: {_target_: ragsweep.judging.lexical.LexicalJudge, number_weight: 0.01}
weights: null
bias: 0.0
threshold: 0.5
max_failure_rate: 0.05
auc: null
labels: null
"""
TOPICS = ["roads", "schools", "parks", "bridges", "libraries", "housing", "water", "transit", "clinics", "farms"]


def _claims_file(path):
    rng = random.Random(7)
    rows = []
    for i in range(32):
        topic, spent = TOPICS[i % len(TOPICS)], 10 + 7 * i
        label = i % 2
        said = spent if label else spent + 3
        if i in (3, 8, 17, 26):  # flipped: the label disagrees with the numbers
            label = 1 - label
        extra = " during winter" if rng.random() < 0.5 else ""
        rows.append({"id": f"c{i}", "question": "q", "kind": "sums",
                     "context": [f"The council spent {spent} dollars on {topic}.", "Rain fell for days."],
                     "claim": f"The council spent {said} dollars on {topic}{extra}.", "label": label})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _sweep(conf, judge: str, root):
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        return compose("config", overrides=[f"judge={judge}", "generator=extractive", f"paths.root={root}"])


def test_calibrate_fits_an_unfitted_ensemble_that_a_sweep_refuses(tmp_path, scratch_project, monkeypatch, capsys):
    from ragsweep.cli import main

    project = scratch_project(tmp_path / "project")
    conf = project / "conf"
    (conf / "judge" / "ensemble.yaml").write_text(UNFITTED)
    claims_path = _claims_file(project / "claims.jsonl")
    monkeypatch.chdir(project)

    with pytest.raises(ConfigError, match=r"judge: judge.weights is null.*run `ragsweep calibrate --judge ensemble`"):
        build(_sweep(conf, "ensemble", project), preflight=False)

    code = main(["--tracking-uri", f"sqlite:///{project}/store/mlflow.db", "calibrate", "--judge", "ensemble",
                 "--claims", "claims.jsonl", "--heldout", "none"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "use it: judge=ensemble_fitted" in out and "wrote conf/judge/ensemble_fitted.yaml" in out
    written = json.loads((project / "calibration" / "ensemble.json").read_text())
    from omegaconf import OmegaConf

    fitted = OmegaConf.load(conf / "judge" / "ensemble_fitted.yaml")
    assert fitted.members.numbers.number_weight == 100.0 and fitted.max_failure_rate == 0.05
    assert abs(fitted.weights.numbers) > 3 * abs(fitted.weights.words) and fitted.weights.numbers > 0
    assert (fitted.auc, fitted.threshold) == (round(written["auc"], 3), written["threshold"])

    # the written option builds in a sweep and judges; in sample (its own weights on the claims they were
    # fitted to, max over passages) it scores better than the out-of-fold AUC calibrate reports
    pipeline = build(_sweep(conf, "ensemble_fitted", project))
    judge = pipeline.judge.component
    assert pipeline.judge_auc == fitted.auc and judge.threshold == fitted.threshold
    claims = load_claims(claims_path)
    scores = []
    for claim in claims:
        verdicts = judge.judge([Pair(claim.claim, passage) for passage in claim.context])
        assert all(v.ok for v in verdicts)
        scores.append(max(v.score for v in verdicts))
    in_sample = roc_auc_score([c.label for c in claims], scores)
    assert float(re.search(r"in-sample (\d\.\d+)", out).group(1)) == pytest.approx(in_sample, abs=1e-3)
    assert written["auc"] < in_sample
    oof = {c["id"]: c["score"] for c in written["claims"]}
    assert not np.allclose([oof[c.id] for c in claims], scores)  # held-out scores, not the final weights'
