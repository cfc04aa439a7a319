"""`best`, `gate` and `report` on runs with a generator, whose answer metrics exist only for some questions.

Every store below holds one retrieval-only run and two runs with `generator=extractive`. Question i's
answer metrics are answers[i]; None is a question whose generation failed: no answer metric at all.
"""

from __future__ import annotations

import json

import pytest
import yaml

from ragsweep import cli
from ragsweep.metrics.answers import ANSWER_METRICS
from ragsweep.results.best import best
from ragsweep.results.exported import ResultsError
from ragsweep.results.rerun import logged_metrics
from ragsweep.results.gate import error_rate_note, gate_table, guarded_metrics
from ragsweep.results.gate_rows import parse_max_drop
from ragsweep.results.report import write_report
from ragsweep.tracking.judges import summary_table

RETRIEVAL = "chunker=fixed,k=3"
K3, K5 = "generator=extractive,k=3", "generator=extractive,k=5"


@pytest.fixture
def runs(store) -> dict[str, str]:
    """The retrieval-only run is best on token_iou (0.9); on answer_f1, k=5 (mean of 0.4, 0.6, 0.8 = 0.6)
    beats k=3 (mean of 0.5, 0.7, 0.3 = 0.5, q1 failed)."""
    return {RETRIEVAL: store.job(RETRIEVAL, [0.9, 0.9, 0.9, 0.9]),
            K3: store.job(K3, [0.2, 0.2, 0.2, 0.2], answers=[0.5, None, 0.7, 0.3]),
            K5: store.job(K5, [0.1, 0.1, 0.1, 0.1], answers=[0.4, 0.6, 0.8, None])}


def test_best_ranks_by_an_answer_metric_and_exports_the_generator(store, runs):
    export = best(store.tracker, "answer_f1", store.root, "answers")
    assert export.table.label.tolist() == [K5, K3, RETRIEVAL]  # no answer_f1 without a generator: last
    config = yaml.safe_load(export.config.read_text())
    assert config["generator"]["_target_"] == "ragsweep.generation.extractive.ExtractiveGenerator"
    assert config["hydra"]["runtime"]["choices"]["generator"] == "extractive"  # the rerun is filterable by it
    manifest = json.loads(export.manifest.read_text())
    assert manifest["metric"] == "answer_f1" and manifest["metrics"]["answer_f1"] == pytest.approx(0.6)
    assert manifest["metrics"]["generation_error_rate"] == 0.25  # q3 of 4 failed
    assert "latency_ms_p50" not in manifest["metrics"]  # milliseconds never repeat: --verify would always fail
    questions = [json.loads(line) for line in export.questions.read_text().splitlines()]
    assert [sorted(set(q["metrics"]) & set(ANSWER_METRICS)) for q in questions] == [sorted(ANSWER_METRICS)] * 3 + [[]]
    # retrieval metrics rank as before: the retrieval-only run wins, and its manifest has no answer metric
    retrieval = best(store.tracker, "token_iou", store.root, "retrieval")
    assert retrieval.table.label.tolist() == [RETRIEVAL, K3, K5]
    assert not set(json.loads(retrieval.manifest.read_text())["metrics"]) & set(ANSWER_METRICS)


def test_best_refuses_an_unknown_metric_or_an_answer_metric_no_run_has(store):
    with pytest.raises(ResultsError, match="--metric answer_f2 is not a metric to rank by; choose one of token_recall, .*, "
                                           "or with a generator answer_exact_match, answer_f1, "):
        best(store.tracker, "answer_f2", store.root)
    store.job(RETRIEVAL, [0.5, 0.5])
    with pytest.raises(ResultsError, match="no run has the metric 'answer_f1'"):  # no such column at all
        best(store.tracker, "answer_f1", store.root)
    store.job(K3, [0.2, 0.2], dataset="other", answers=[0.5, 0.5])  # the column exists, on another dataset
    with pytest.raises(ResultsError, match="no FINISHED run on dataset sotu_qa has answer_f1: answer metrics need a "
                                           "generator"):
        best(store.tracker, "answer_f1", store.root, dataset="sotu_qa")
    assert not (store.root / "conf" / "best").exists()


def test_tables_show_the_generation_metrics_only_when_a_run_has_a_generator(store, runs):
    retrieval_only = ["rank", "config", "status", "token_iou", "token_recall", "token_precision", "precision_omega",
                      "recall", "mrr", "ndcg", "run_id"]
    export = best(store.tracker, "token_iou", store.root)
    table = summary_table(export.table, "token_iou")
    assert table.columns.tolist() == [*retrieval_only[:3], "generator", *retrieval_only[3:-1], *ANSWER_METRICS,
                                      "generation_error_rate", "latency_ms_p50", "run_id"]
    assert table.generator.tolist() == ["none", "extractive", "extractive"]
    assert table.answer_f1.isna().tolist() == [True, False, False]
    assert table.generation_error_rate.tolist()[1:] == [0.25, 0.25]
    alone = summary_table(export.table[export.table.label == RETRIEVAL], "token_iou")
    assert alone.columns.tolist() == retrieval_only  # a retrieval-only table is unchanged


def test_verify_reads_a_generator_runs_metrics_json(store, runs):
    """metrics.json with a generator holds latency percentiles as {value, n, ci95}: no mean to compare."""
    folder = store.root / "jobs" / f"{K5}-sotu_qa"
    metrics = logged_metrics(json.loads((folder / "metrics.json").read_text()))
    assert metrics["answer_f1"] == pytest.approx(0.6) and metrics["generation_error_rate"] == 0.25
    assert "latency_ms_p50" not in metrics and "generation_ms_p95" not in metrics
    run = store.tracker.client().get_run(runs[K5]).data.metrics  # what --verify compares: MLflow's means
    assert {name: value for name, value in run.items() if name in metrics} == metrics


def _questions(values: list[float | None]) -> dict[str, dict[str, float]]:
    return {f"q{i}": {"token_iou": 0.5, **({} if v is None else {"answer_f1": v})} for i, v in enumerate(values)}


def test_the_gate_pairs_only_questions_with_the_answer_metric_in_both_runs():
    before, after = [0.5, None, 0.7, 0.3], [0.4, 0.6, None, 0.2]
    # paired: q0 (0.5 -> 0.4) and q3 (0.3 -> 0.2); every resampled difference is 0.1, so p = 0
    table = gate_table({"answer_f1": 0.5, "token_iou": 0.5}, {"answer_f1": 0.4, "token_iou": 0.5},
                       _questions(before), _questions(after), ["answer_f1", "token_iou"], parse_max_drop("5%"),
                       0.05, samples=500)
    answer, spans = table.iloc[0], table.iloc[1]
    assert answer.paired == 2 and answer["p-value"] == 0.0 and answer["change %"] == "-20.0%"
    assert answer.verdict == "FAIL: dropped more than 5%, worse at p < 0.05"
    assert spans.paired == 4 and spans.ok  # a retrieval metric pairs every question, as before
    none = gate_table({"answer_f1": 0.5}, {"answer_f1": 0.6}, _questions([0.5, None]), _questions([None, 0.6]),
                      ["answer_f1"], parse_max_drop("5%"), 0.05, samples=100).iloc[0]
    assert none.paired == 0 and none.verdict == "FAIL: no question has answer_f1 in both runs"


def test_answer_metrics_can_be_guarded_when_the_baseline_has_them():
    manifest = {"metric": "answer_f1", "metrics": {"token_iou": 0.5, "answer_f1": 0.6, "generation_error_rate": 0.0}}
    assert guarded_metrics("answer_f1,token_iou", manifest) == ["answer_f1", "token_iou"]
    with pytest.raises(ResultsError, match="choose from token_iou$"):
        guarded_metrics("answer_f1", {"metric": "token_iou", "metrics": {"token_iou": 0.5}})  # retrieval-only baseline
    assert guarded_metrics("generation_error_rate", manifest) == ["generation_error_rate"]  # fails on a rise


def test_error_rate_note():
    assert error_rate_note({"token_iou": 0.5}, {"token_iou": 0.5}) is None  # retrieval only: nothing to say
    assert error_rate_note({"generation_error_rate": 0.0}, {"generation_error_rate": 0.0}) == (
        "generation_error_rate (lower is better): recorded 0.0000, current 0.0000")
    rose = error_rate_note({"generation_error_rate": 0.0}, {"generation_error_rate": 0.25})
    assert rose.startswith("WARNING: generation_error_rate") and "current 0.2500; it rose" in rose


def test_gate_command_says_how_many_questions_it_paired_and_that_the_error_rate_rose(store, capsys):
    base = store.job(K5, [0.1, 0.1, 0.1, 0.1], answers=[0.4, 0.6, 0.8, 0.5])  # every question answered
    worse = store.job(K3, [0.1, 0.1, 0.1, 0.1], answers=[0.4, None, 0.8, None])
    best(store.tracker, "answer_f1", store.root, "answers", condition=f"tags.mlflow.runName = '{K5}'")
    assert json.loads((store.root / "conf" / "best" / "answers.manifest.json").read_text())["run_id"] == base
    code = cli.main(["--project", str(store.root), "--tracking-uri", store.tracker.uri, "gate",
                     "--baseline", str(store.root / "conf" / "best" / "answers.yaml"), "--run", worse,
                     "--allow-other-config", "--metrics", "answer_f1,token_iou"])
    out = capsys.readouterr().out
    # q0 and q2 are paired, unchanged: means 0.575 recorded, 0.6 now; no drop
    assert code == 0, out
    assert "| answer_f1 | 0.575    | 0.6     | 0.025  | +4.3%    |" in out
    assert ("answer_f1: the bootstrap paired the 2 of those 4 questions that have it in both runs" in out)
    assert "token_iou: the bootstrap paired" not in out
    assert ("WARNING: generation_error_rate (lower is better): recorded 0.0000, current 0.5000; it rose" in out)


def test_report_shows_answer_metrics_and_labels_latencies_that_add_up_other_stages(store, runs):
    page = write_report(store.tracker, "answer_f1", store.root / "answers.html", bootstrap_samples=200).path.read_text()
    assert "Answers and what they cost (configurations with a generator)" in page
    assert "<th>answer_f1</th>" in page and "<th>generation_error_rate</th>" in page and "<th>generator</th>" in page
    assert "1 configurations without a generator have no answer_f1" in page
    # k=5 against k=3 on answer_f1: both have it for q0 and q2 only (q1 failed in k=3, q3 in k=5)
    assert "<td>2</td>" in page and "configurations have answer_f1 for" in page
    assert "end-to-end latency" in page and "search + rerank + generation per question" in page  # only generators plotted
    assert "Not comparable on latency" not in page
    mixed = write_report(store.tracker, "token_iou", store.root / "spans.html", bootstrap_samples=200).path.read_text()
    assert "Not comparable on latency" in mixed and "search + rerank" in mixed
    assert mixed.count('src="data:image/png;base64,') == 5  # effects, bars, k curves (k=3, 5 with a generator), Pareto,
    # heatmap; the retrieval-only run is the one with chunker=fixed and no generator: those two changed together
    assert "cannot be separated from generator" in mixed


def test_the_notebook_shows_the_answer_metrics_when_the_store_has_them(store, runs, run_notebook, monkeypatch):
    (store.root / "mlruns" / "mlflow.db").symlink_to(store.tracker.uri.removeprefix("sqlite:///"))  # where it looks
    store.job(RETRIEVAL, [0.3, 0.3], dataset="other")  # the newest run: a dataset without a generator
    monkeypatch.setenv("RAGSWEEP_EXPERIMENT", store.tracker.experiment)
    monkeypatch.setenv("RAGSWEEP_METRIC", "answer_f1")
    monkeypatch.setenv("RAGSWEEP_DATASET", "sotu_qa")
    cells = run_notebook(store.root)
    printed = "".join(o.get("text", "") for cell in cells for o in cell.outputs)
    tables = ["".join(o.get("data", {}).get("text/html", "") for o in cell.outputs) for cell in cells]
    assert "best: generator=extractive,k=5  (answer_f1 = 0.6000, run " in printed
    assert "<th>generator</th>" in tables[1] and "<th>generation_error_rate</th>" in tables[1]
    answers = next(table for table in tables if "answer_similarity" in table)  # the answers-and-costs cell
    assert "generator=extractive,k=3" in answers and "chunker=fixed,k=3" not in answers
    assert "<th>answer</th>" in tables[4]  # the drill-down: each question's answer beside its score
    monkeypatch.setenv("RAGSWEEP_METRIC", "token_iou")
    monkeypatch.setenv("RAGSWEEP_DATASET", "other")
    cells = run_notebook(store.root)
    printed = "".join(o.get("text", "") for cell in cells for o in cell.outputs)
    assert "no run on dataset other generated answers" in printed
