"""`best` exports the winner's per-question values and question hashes beside its manifest, so the gate needs no store
for them."""

from __future__ import annotations

import hashlib
import json

import pytest

from ragsweep.metrics.evaluate import METRIC_KEYS
from ragsweep.per_query import HASH
from ragsweep.results.best import best
from ragsweep.results.exported import ResultsError, exported_questions, read_manifest
from ragsweep.types import Query


def test_best_writes_each_questions_id_and_metrics_with_their_sha256_in_the_manifest(store):
    store.job("chunker=fixed,k=3", [0.1, 0.2])
    store.job("chunker=recursive,k=3", [0.5, 0.25])
    export = best(store.tracker, "token_iou", store.root, "quick")
    lines = export.questions.read_text().splitlines()
    # the winner's questions in its order with the hash of what each asks; its text, references and spans stay in
    # the store
    assert [json.loads(line) for line in lines] == [
        {"id": "q0", HASH: Query("q0", "?", ()).sha256(), "metrics": dict.fromkeys(METRIC_KEYS, 0.5)},
        {"id": "q1", HASH: Query("q1", "?", ()).sha256(), "metrics": dict.fromkeys(METRIC_KEYS, 0.25)}]
    assert export.questions.name == "quick.per_query.jsonl"
    assert read_manifest(export.config)["per_query"] == {
        "file": "quick.per_query.jsonl", "questions": 2,
        "sha256": hashlib.sha256(export.questions.read_bytes()).hexdigest()}


def test_the_gate_reads_the_exported_questions_and_refuses_an_edited_or_stale_file(store):
    store.job("chunker=recursive,k=3", [0.5, 0.25])
    export = best(store.tracker, "token_iou", store.root, "quick")
    manifest = read_manifest(export.config)
    assert exported_questions(export.config, manifest) == {"q0": dict.fromkeys(METRIC_KEYS, 0.5),
                                                           "q1": dict.fromkeys(METRIC_KEYS, 0.25)}
    original = export.questions.read_text()
    export.questions.write_text(original.replace("0.25", "0.35", 1))  # one value edited
    with pytest.raises(ResultsError, match=r"quick\.per_query\.jsonl does not match the sha256 in quick\.manifest\.json"):
        exported_questions(export.config, manifest)
    export.questions.write_bytes(original.replace("\n", "\r\n").encode())  # a checkout with core.autocrlf
    assert exported_questions(export.config, manifest) == {"q0": dict.fromkeys(METRIC_KEYS, 0.5),
                                                           "q1": dict.fromkeys(METRIC_KEYS, 0.25)}
    old = {key: value for key, value in manifest.items() if key != "per_query"}  # a manifest from before the file
    with pytest.raises(ResultsError, match="does not match the sha256"):
        exported_questions(export.config, old)
    export.questions.unlink()
    assert exported_questions(export.config, old) is None  # an export from before: the gate asks the store
