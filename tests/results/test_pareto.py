"""`best --pareto` on a real MLflow store of hand-made runs: the front, its ties, what it leaves out, its exports."""

from __future__ import annotations

import json

import pytest

from ragsweep.results.exported import ResultsError, read_manifest
from ragsweep.results.pareto import pareto, pareto_metrics
from ragsweep.tracking.tags import FINGERPRINT_TAG

GENERATED = "chunker=recursive,k=5,generator=extractive"


@pytest.fixture
def runs(store) -> dict[str, str]:
    """(token_iou, latency_ms_p95) as the store logs them: latency p95 is 9 ms without a generator, 190 ms with.
    GENERATED (0.9, 190) and the two at (0.7, 9) trade quality for latency; (0.3, 9) is beaten by (0.7, 9);
    `stopped` (1.0, 9) would beat them all, but stopped in a race it has no config fingerprint."""
    made = {"low": store.job("chunker=fixed,k=3", [0.2, 0.4]),
            "tie a": store.job("chunker=fixed,k=5", [0.6, 0.8]),
            "tie b": store.job("chunker=recursive,k=3", [0.8, 0.6]),
            GENERATED: store.job(GENERATED, [0.9, 0.9], answers=[0.5, 0.5]),
            "stopped": store.job("chunker=fixed,k=10", [1.0, 1.0])}
    store.tracker.client().delete_tag(made["stopped"], FINGERPRINT_TAG)
    return made


def test_the_front_trades_quality_for_latency_one_export_per_point(store, runs):
    front = pareto(store.tracker, "token_iou,latency_ms_p95", store.root, "q")
    assert front.table.config.tolist() == [GENERATED, "chunker=fixed,k=5", "chunker=recursive,k=3"]
    assert front.table.point.tolist() == [1, 2, 2] and front.considered == 4  # the stopped run is not one
    assert front.ties == ["chunker=recursive,k=3 ties chunker=fixed,k=5 on every metric (point 2): not exported; "
                          "pick it with --where to export it instead"]
    assert [path.name for path in front.exports] == ["q_pareto_1.yaml", "q_pareto_2.yaml"]
    manifest = read_manifest(front.exports[1])
    assert manifest["run_id"] == runs["tie a"] and manifest["metric"] == "token_iou"
    assert manifest["pareto"] == {"metrics": ["token_iou", "latency_ms_p95"], "directions": ["maximize", "minimize"],
                                  "point": 2, "points": 2,
                                  "values": {"token_iou": pytest.approx(0.7), "latency_ms_p95": 9.0}}
    assert (store.root / "conf" / "best" / "q_pareto_2.per_query.jsonl").is_file()


def test_runs_without_a_metric_are_left_out_and_said_so_and_stale_points_removed(store, runs):
    pareto(store.tracker, "token_iou,latency_ms_p95", store.root, "q")
    front = pareto(store.tracker, "answer_f1,answer_tokens_mean", store.root, "q")
    assert front.table.config.tolist() == [GENERATED] and front.considered == 1
    assert sorted(front.left_out) == ["chunker=fixed,k=3: no answer_f1, answer_tokens_mean",
                                      "chunker=fixed,k=5: no answer_f1, answer_tokens_mean",
                                      "chunker=recursive,k=3: no answer_f1, answer_tokens_mean"]
    assert sorted(path.name for path in front.removed) == ["q_pareto_2.manifest.json", "q_pareto_2.per_query.jsonl",
                                                           "q_pareto_2.yaml"]
    assert json.loads((store.root / "conf" / "best" / "q_pareto_1.manifest.json").read_text())["run_id"] == \
        runs[GENERATED]


def test_a_metric_named_twice_is_refused():  # the other refusals are rows of tests/cli/test_results.py
    with pytest.raises(ResultsError, match="a metric is named twice"):
        pareto_metrics("token_iou,token_iou")
