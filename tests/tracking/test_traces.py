"""The dataset as a run input and questions as traces, read back from a real MLflow sqlite store."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from ragsweep.runner.build import build
from ragsweep.runner.plan import plan_job
from ragsweep.tracking.mlflow_tracker import MlflowTracker

CONF = Path(__file__).resolve().parents[2] / "conf"
FINGERPRINT = "0123456789abcdef" * 4  # 64 hex characters, like Dataset.fingerprint


@pytest.fixture
def tracker(tmp_path):
    def make(trace_queries: int = 20) -> MlflowTracker:
        return MlflowTracker(f"sqlite:///{tmp_path}/mlruns/mlflow.db", "traces", str(tmp_path / "artifacts"),
                             trace_queries=trace_queries)

    return make


@pytest.fixture
def no_network(monkeypatch):
    """Records (and refuses) every attempt to open a network connection."""
    attempts = []
    connect = socket.socket.connect

    def refuse(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError(f"network call to {address} during a test that must make none")
        return connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


def _record(number: int, error: str | None = None) -> dict:
    hits = [{"doc_id": "2023", "start": 10 * number, "end": 10 * number + 40, "score": 0.9, "text": f"passage {number}"}]
    return {
        "id": f"sotu-{number:03d}", "question": f"question {number}?",
        "answer": None if error else f"answer {number}", "error": error,
        "spans": [
            {"name": "retrieval", "span_type": "RETRIEVER", "inputs": {"query": f"question {number}?", "k": 1},
             "outputs": hits, "ms": 12.5},
            {"name": "rerank", "span_type": "RERANKER", "inputs": {"candidates": 1}, "outputs": hits, "ms": 3.25},
            {"name": "generation", "span_type": "LLM", "inputs": {"prompt": f"[1] passage {number}\nQ?"},
             "outputs": {"answer": f"answer {number}", "prompt_tokens": 120, "completion_tokens": 9}, "ms": 812.0},
        ],
    }


def _traces(tracker: MlflowTracker, run_id: str) -> list:
    import mlflow

    return mlflow.search_traces(locations=[tracker.experiment_id()], run_id=run_id, return_type="list")


def test_the_dataset_is_the_runs_input_with_its_fingerprint_as_digest(tracker):
    t = tracker()
    with t.start_run("job", {"k": 5}, {}) as run_id:
        t.log_dataset("sotu_qa", FINGERPRINT, "/data/sotu_qa", queries=25)
    inputs = t.client().get_run(run_id).inputs.dataset_inputs
    assert len(inputs) == 1
    dataset = inputs[0].dataset
    assert dataset.name == "sotu_qa"
    assert dataset.digest == FINGERPRINT[:36]  # MLflow caps a digest at 36 characters: our fingerprint's prefix
    assert '"fingerprint": "' + FINGERPRINT + '"' in dataset.profile and '"queries": 25' in dataset.profile
    assert "/data/sotu_qa" in dataset.source
    assert {(tag.key, tag.value) for tag in inputs[0].tags} == {("mlflow.data.context", "evaluation")}


def test_the_first_trace_queries_questions_become_traces_of_their_run(tracker, no_network):
    t = tracker(trace_queries=20)
    with t.start_run("other", {}, {}) as other_id:
        assert t.log_query_traces([_record(900)]) == 1
    with t.start_run("job", {}, {}) as run_id:
        assert t.log_query_traces([_record(n) for n in range(25)]) == 20
    # read right after the run closed, without flushing here: the tracker flushed before closing it
    traces = _traces(t, run_id)
    assert sorted(trace.info.trace_metadata["mlflow.sourceRun"] for trace in traces) == [run_id] * 20
    assert sorted(trace.data.spans[0].name for trace in traces) == [f"sotu-{n:03d}" for n in range(20)]
    assert [trace.data.spans[0].name for trace in _traces(t, other_id)] == ["sotu-900"]
    assert no_network == []

    trace = next(trace for trace in traces if trace.data.spans[0].name == "sotu-007")
    root, *stages = sorted(trace.data.spans, key=lambda span: (span.parent_id is not None, span.start_time_ns))
    assert str(trace.info.state) in ("OK", "TraceState.OK")
    assert root.inputs == {"question": "question 7?"} and root.outputs == {"answer": "answer 7"}
    assert [span.name for span in stages] == ["retrieval", "rerank", "generation"]
    assert [span.span_type for span in stages] == ["RETRIEVER", "RERANKER", "LLM"]
    assert all(span.parent_id == root.span_id for span in stages)
    for span, ms in zip(stages, (12.5, 3.25, 812.0), strict=True):
        assert abs((span.end_time_ns - span.start_time_ns) / 1e6 - ms) <= 1
    # laid end to end: each stage starts when the one before ended; the question spans all three
    assert [s.start_time_ns for s in stages[1:]] == [s.end_time_ns for s in stages[:-1]]
    assert root.start_time_ns == stages[0].start_time_ns and root.end_time_ns == stages[-1].end_time_ns
    assert abs((root.end_time_ns - root.start_time_ns) / 1e6 - 827.75) <= 1  # 12.5 + 3.25 + 812.0
    assert stages[0].inputs == {"query": "question 7?", "k": 1}
    assert stages[2].inputs == {"prompt": "[1] passage 7\nQ?"}
    assert stages[2].outputs == {"answer": "answer 7", "prompt_tokens": 120, "completion_tokens": 9}
    assert stages[2].attributes["mlflow.chat.tokenUsage"] == {"input_tokens": 120, "output_tokens": 9,
                                                              "total_tokens": 129}
    # MLflow's retriever document shape, which the Traces tab renders as passages
    assert stages[0].outputs == stages[1].outputs == [{
        "page_content": "passage 7", "id": "2023:70-110",
        "metadata": {"doc_uri": "2023:70-110", "doc_id": "2023", "start": 70, "end": 110, "score": 0.9}}]


def test_trace_queries_zero_logs_no_trace(tracker):
    t = tracker(trace_queries=0)
    with t.start_run("job", {}, {}) as run_id:
        assert t.log_query_traces([_record(n) for n in range(5)]) == 0
    assert _traces(t, run_id) == []
    assert _traces(t, None) == []  # none anywhere in the experiment


def test_a_failed_generation_is_an_error_trace_with_its_message(tracker):
    t = tracker()
    with t.start_run("job", {}, {}) as run_id:
        t.log_query_traces([_record(1), _record(2, error="ReadTimeout after 3 retries")])
    states = {trace.data.spans[0].name: trace for trace in _traces(t, run_id)}
    assert str(states["sotu-001"].info.state).endswith("OK")
    failed = states["sotu-002"]
    assert str(failed.info.state).endswith("ERROR")
    root = next(span for span in failed.data.spans if span.parent_id is None)
    assert str(root.status.status_code).endswith("ERROR")
    assert root.status.description == "ReadTimeout after 3 retries"
    assert root.outputs == {"answer": None}


@pytest.mark.parametrize("value", [-1, 1.5, True, "20"])
def test_trace_queries_must_be_a_count(tracker, value):
    with pytest.raises(ValueError, match=r"tracking.trace_queries must be an integer >= 0, got"):
        tracker(trace_queries=value)


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def test_trace_queries_is_a_tracking_key_outside_the_fingerprint(tmp_path):
    default = _compose(f"paths.root={tmp_path}")
    assert default.tracking.trace_queries == 20
    fingerprints = {}
    for overrides in ([], ["tracking.trace_queries=0"], ["tracking.trace_queries=5"], ["k=3"]):
        cfg = _compose(f"paths.root={tmp_path}", *overrides)
        fingerprints[tuple(overrides)] = plan_job(cfg).fingerprint("data")
    assert fingerprints[()] == fingerprints[("tracking.trace_queries=0",)] == fingerprints[("tracking.trace_queries=5",)]
    assert fingerprints[("k=3",)] != fingerprints[()]  # control: a result key does change it
    # the runner's check of unknown constructor keys accepts it, and hands it to the tracker
    assert build(_compose(f"paths.root={tmp_path}", "tracking.trace_queries=5"), preflight=False).tracker.trace_queries == 5
