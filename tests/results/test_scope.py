"""`best` and `report` rank the runs of one dataset and name each configuration by its label."""

from __future__ import annotations

import json

import pytest
import yaml

from ragsweep.results.best import best
from ragsweep.results.exported import ResultsError
from ragsweep.results.report import write_report


def _two_datasets(store) -> dict[str, str]:
    """sotu_qa's three configs logged first, then one chroma_general config that beats them all."""
    return {"sotu fixed": store.job("chunker=fixed,k=3", [0.1, 0.2, 0.3, 0.2]),
            "sotu recursive": store.job("chunker=recursive,k=3", [0.3, 0.4, 0.5, 0.4]),
            "sotu recursive 5": store.job("chunker=recursive,k=5", [0.2, 0.3, 0.4, 0.3]),
            "chroma": store.job("chunker=fixed,k=5", [0.9, 0.8, 0.9], "chroma_general", ["c1", "c2", "c3"])}


def test_report_on_two_datasets_covers_the_newest_runs_dataset_or_the_one_asked_for(store):
    _two_datasets(store)  # the crash: best (chroma, c1..c3) against a runner-up on sotu_qa (q0..q3) shared no question
    newest = write_report(store.tracker, "token_iou", store.root / "newest.html", bootstrap_samples=200)
    assert newest.dataset == "chroma_general" and newest.datasets == ["chroma_general", "sotu_qa"]
    page = newest.path.read_text()
    assert "on dataset chroma_general" in page and "chunker=recursive" not in page
    asked = write_report(store.tracker, "token_iou", store.root / "sotu.html", dataset="sotu_qa", bootstrap_samples=200)
    page = asked.path.read_text()
    assert asked.dataset == "sotu_qa" and "chunker=fixed,k=5" not in page  # the chroma_general run
    # the winner against both runners-up, on sotu_qa's 4 questions: every difference 0.2 and 0.1
    comparisons = page.split("Which setting moved")[0]  # the effects table after it has a questions column too
    assert comparisons.count("<td>4</td>") == 2 and "<td>0.2</td>" in comparisons and "<td>0.1</td>" in comparisons


def test_best_ranks_the_newest_runs_dataset_unless_told_another(store):
    runs = _two_datasets(store)
    # the chroma_general run is the newest: by default it competes alone, and wins
    assert best(store.tracker, "token_iou", store.root, "a").table.run_id.tolist() == [runs["chroma"]]
    export = best(store.tracker, "token_iou", store.root, "b", dataset="sotu_qa")
    assert export.dataset == "sotu_qa"
    assert export.table.run_id.tolist() == [runs["sotu recursive"], runs["sotu recursive 5"], runs["sotu fixed"]]
    assert json.loads(export.manifest.read_text())["dataset"] == "sotu_qa"


def test_an_unknown_dataset_is_refused_with_the_ones_there_and_nothing_written(store):
    _two_datasets(store)
    with pytest.raises(ResultsError, match="--dataset beir: no FINISHED run on it; datasets: chroma_general, sotu_qa"):
        best(store.tracker, "token_iou", store.root, "c", dataset="beir")
    with pytest.raises(ResultsError, match="--dataset beir"):
        write_report(store.tracker, "token_iou", store.root / "r.html", dataset="beir")
    assert not (store.root / "conf" / "best" / "c.yaml").exists() and not (store.root / "r.html").exists()


def test_configurations_are_named_by_their_label_not_the_name_of_a_verify_rerun(store):
    store.job("chunker=fixed,k=3", [0.1, 0.2])
    winner = store.job("chunker=recursive,k=3", [0.5, 0.6], name="best/ragsweep")  # a rerun before runs had labels
    export = best(store.tracker, "token_iou", store.root, "quick")
    assert export.table.label.tolist() == ["chunker=recursive,k=3", "chunker=fixed,k=3"]
    manifest = json.loads(export.manifest.read_text())
    assert manifest["run_id"] == winner and manifest["label"] == "chunker=recursive,k=3"
    page = write_report(store.tracker, "token_iou", store.root / "r.html", bootstrap_samples=200).path.read_text()
    assert "best/ragsweep" not in page and "<b>chunker=recursive,k=3</b>" in page


def test_the_export_carries_the_winners_label_and_group_choices_for_its_rerun(store):
    store.job("chunker=recursive,k=3", [0.5, 0.6])
    export = best(store.tracker, "token_iou", store.root, "quick")
    text = export.config.read_text()
    assert "chunker=recursive,k=3" in text.splitlines()[1]  # the header names the winner
    config = yaml.safe_load(text)
    assert config["label"] == "chunker=recursive,k=3" and config["k"] == 3
    assert config["hydra"]["runtime"]["choices"] == {"chunker": "recursive", "dataset": "sotu_qa"}
    assert json.loads(export.manifest.read_text())["choices"] == {"chunker": "recursive", "dataset": "sotu_qa"}
