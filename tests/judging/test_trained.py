"""The trained judge: a real (tiny) fine-tuning run of MiniLM stored in the cache, reused without training,
scores in [0, 1], long passages judged in windows, and bad settings refused by name."""

from __future__ import annotations

import json
import logging

import pytest

from ragsweep.judging.base import Pair
from ragsweep.judging.trained import TrainedJudge

TEXTS = [
    "In 1862 the Union held 3,000 miles of coast under blockade. Congress created the Department of Agriculture. "
    "The President said that emancipation would shorten the war. We must not forget the soldiers who fell.",
    "In 1941 Roosevelt spoke of four freedoms. He asked Congress for ships, planes and guns for Britain. "
    "The nation was not ready for war. Every realist knows that the democratic way of life is under assault.",
]
TINY = {"examples": 24, "epochs": 1, "max_length": 64, "train_batch_size": 8, "progress": False, "threads": 2}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("stage_cache")


@pytest.fixture(scope="module")
def judge(cache_dir):
    judge = TrainedJudge(dataset=TEXTS, cache_dir=str(cache_dir), **TINY)
    judge.preflight()
    return judge


def test_a_tiny_training_run_stores_a_whole_model_under_its_key(judge, cache_dir):
    assert judge.path.parent == cache_dir / "judges"
    assert (judge.path / "config.json").is_file() and (judge.path / "model.safetensors").is_file()
    record = json.loads((judge.path / "training.json").read_text())
    assert record["settings"]["examples"] == 24 and sum(record["kinds"].values()) == 24
    assert [p.name for p in judge.path.parent.iterdir()] == [judge.path.name]  # no temporary folder left behind


def test_a_second_judge_with_the_same_corpus_and_settings_reads_the_cache(judge, cache_dir, monkeypatch, caplog):
    def no_training(self, folder):
        raise AssertionError("trained again although the cache holds the model")

    monkeypatch.setattr(TrainedJudge, "_train", no_training)
    again = TrainedJudge(dataset={"b": _doc("b", TEXTS[1]), "a": _doc("a", TEXTS[0])}, cache_dir=str(cache_dir), **TINY)
    with caplog.at_level(logging.INFO, logger="ragsweep.judging.training.finetune"):
        assert again.build() == judge.path  # a {doc_id: Document} mapping is read in id order: the same corpus
    assert "from the cache" in caplog.text
    assert again.judge([Pair("Roosevelt spoke of four freedoms.", TEXTS[1])])[0].ok


def test_another_seed_or_corpus_is_another_model(judge, cache_dir):
    assert TrainedJudge(dataset=TEXTS, seed=1, cache_dir=str(cache_dir), **TINY).path != judge.path
    assert TrainedJudge(dataset=TEXTS[:1], cache_dir=str(cache_dir), **TINY).path != judge.path
    assert TrainedJudge(dataset=TEXTS, threshold=0.7, cache_dir=str(cache_dir), **TINY).path == judge.path


def test_scores_are_probabilities_and_failures_are_verdicts(judge):
    pairs = [Pair("Congress created the Department of Agriculture.", TEXTS[0]),
             Pair("Congress abolished the Department of Agriculture.", TEXTS[0]),
             Pair("Which freedoms did Roosevelt name?", TEXTS[1], task="relevance"),
             Pair("A claim about nothing.", ""),
             Pair("   ", TEXTS[0])]
    verdicts = judge.judge(pairs)
    assert [v.status for v in verdicts] == ["ok", "ok", "ok", "ok", "error"]
    assert all(0.0 <= v.score <= 1.0 for v in verdicts[:4])
    assert "empty claim" in verdicts[4].raw


def test_a_passage_longer_than_max_length_gets_its_best_window(judge):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(judge.path)
    passage = " ".join(TEXTS)  # about 100 tokens; max_length is 64
    claim = "Roosevelt spoke of four freedoms."
    windows = judge._windows(tokenizer, Pair(claim, passage))
    assert len(windows) > 1 and all(len(tokenizer(w, claim)["input_ids"]) <= 64 for w in windows)
    assert windows[-1].endswith("under assault.") and windows[0].startswith("In 1862")
    whole, *parts = judge.judge([Pair(claim, passage)] + [Pair(claim, w) for w in windows])
    assert whole.score == pytest.approx(max(p.score for p in parts), abs=1e-5)


def test_without_a_corpus_the_judge_says_what_to_pass(tmp_path):
    with pytest.raises(ValueError, match=r"judge\.dataset: .*--dataset NAME or --claims FILE"):
        TrainedJudge(cache_dir=str(tmp_path)).preflight()
    verdicts = TrainedJudge(cache_dir=str(tmp_path)).judge([Pair("a claim", "a passage")])
    assert verdicts[0].status == "error" and "judge.dataset" in verdicts[0].raw


@pytest.mark.parametrize(("setting", "key"), [
    ({"examples": 1}, "judge.examples"), ({"epochs": 0}, "judge.epochs"), ({"seed": -1}, "judge.seed"),
    ({"train_batch_size": 0}, "judge.train_batch_size"), ({"max_length": 1024}, "judge.max_length"),
    ({"learning_rate": 0}, "judge.learning_rate"), ({"threshold": 1.5}, "judge.threshold"),
    ({"threads": 0}, "judge.threads"), ({"examples": True}, "judge.examples"),
])
def test_bad_settings_raise_naming_the_key(setting, key):
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        TrainedJudge(dataset=TEXTS, **setting)


def _doc(doc_id: str, text: str):
    from ragsweep.types import Document

    return Document(doc_id, text)


def test_train_judge_command_builds_then_finds_the_model(scratch_project, tmp_path, capsys):
    from ragsweep.cli import main

    project = scratch_project(tmp_path / "project")
    claims = tmp_path / "claims.jsonl"
    claims.write_text("\n".join(json.dumps({"id": str(i), "claim": "x", "context": [text]})
                                for i, text in enumerate(TEXTS)))
    command = ["--project", str(project), "train-judge", "--claims", str(claims), "--examples", "8"]
    assert main(command) == 0
    first = capsys.readouterr().out
    assert f"2 passages of {claims}: {project / '.cache' / 'ragsweep' / 'judges'}" in first
    assert main(command) == 0 and capsys.readouterr().out.split(" (")[0] == first.split(" (")[0]
    assert main(command[:-1] + ["1"]) == 2
    assert "judge.examples must be an integer >= 2" in capsys.readouterr().err


def test_calibrate_trains_it_on_the_claims_files_passages_never_its_labels(scratch_project, tmp_path, capsys):
    from ragsweep.cli import main
    from ragsweep.judging.calibration.labelled_claims import load_claims

    project = scratch_project(tmp_path / "project")
    command = ["--project", str(project), "calibrate", "--judge", "trained", "--limit", "6", "--heldout", "none", "--out",
               str(tmp_path / "calibration"), "judge.examples=8", "judge.max_length=64", "judge.progress=false"]
    assert main(command) == 0, capsys.readouterr().err
    assert "AUC" in capsys.readouterr().out
    (model,) = (project / ".cache" / "ragsweep" / "judges").iterdir()
    passages = {passage for claim in load_claims() for passage in claim.context}  # all of them, not the first 6's
    assert json.loads((model / "training.json").read_text())["corpus_texts"] == len(passages)
    # the same passages with every label flipped train the same model: labels never reach training
    flipped = tmp_path / "flipped.jsonl"
    flipped.write_text("".join(json.dumps({"id": c.id, "question": c.question, "context": list(c.context),
                                           "claim": c.claim, "label": 1 - c.label}) + "\n" for c in load_claims()))
    assert main(command + ["--claims", str(flipped)]) == 0, capsys.readouterr().err
    assert [path.name for path in (project / ".cache" / "ragsweep" / "judges").iterdir()] == [model.name]
