"""Judged metrics in `best`, `report`, `gate`, the sweep's summary and the notebook: ranked, shown beside their
judge and its AUC, and never compared between two different judges.

One real sweep of two jobs (module fixture, about a minute): `generator=extractive` on three short documents,
judged once by `lexical` (threshold 0.5, AUC not measured) and once by a user's option `strict` (the lexical
judge at threshold 0.9 with judge.auc 0.61). The extractive answer is a retrieved sentence, so every claim is
covered word for word and both judges find faithfulness 1.0: the two runs tie on it, and the tie goes to the
run name, `...judge=lexical...` before `...judge=strict...`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ragsweep.tracking import judges
from ragsweep.results.best import best
from ragsweep.results.exported import ResultsError, exported_questions, read_manifest
from ragsweep.results.rerun import compare, rerun
from ragsweep.results.gate import error_rate_note, gate_table, guarded_metrics, job_result, judge_line
from ragsweep.results.gate_rows import parse_max_drop
from ragsweep.tracking.judges import JudgeInfo, from_config, from_params, judge_labels
from ragsweep.results.report import write_report
from ragsweep.tracking.mlflow_tracker import MlflowTracker
from ragsweep.tracking.runs import finished_jobs
from ragsweep.tracking.runs import unjudged_summary_table
from ragsweep.tracking.table import param
from tests.results.native import write_native_dataset
from tests.preloaded import run_command

LEXICAL, STRICT = "lexical (AUC not measured, unvalidated)", "strict (AUC 0.61)"
TEXTS = {"bridge": "The Harbour Bridge was opened in 1932 by the mayor. It carries eight lanes of traffic.",
         "river": "The river freezes every January. Ferries stop running until the ice melts in March.",
         "library": "The city library holds two million books. It was founded in 1851 by a merchant."}
QUESTIONS = [("bridge", "When was the Harbour Bridge opened?", "1932"),
             ("river", "When does the ice melt?", "in March"), ("library", "Who founded the library?", "a merchant")]


def _run(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}  # entry points set them
    return run_command([sys.executable, *args], cwd=project, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def project(tmp_path_factory, scratch_project) -> Path:
    folder = scratch_project(tmp_path_factory.mktemp("judged"))
    write_native_dataset(folder, TEXTS, QUESTIONS)
    shipped = (folder / "conf" / "judge" / "lexical.yaml").read_text()
    lexical = re.sub(r"\nauc: [0-9.]+", "\nauc: null", re.sub(r"\nthreshold: [0-9.]+", "\nthreshold: 0.5", shipped))
    assert "\nthreshold: 0.5 " in lexical and "\nauc: null " in lexical
    (folder / "conf" / "judge" / "lexical.yaml").write_text(lexical)  # this project's copy: not yet calibrated
    strict = re.sub(r"auc: null", "auc: 0.61", re.sub(r"threshold: 0.5", "threshold: 0.9", lexical))
    assert strict.count("0.9") == 1 and "auc: 0.61" in strict
    (folder / "conf" / "judge" / "strict.yaml").write_text(strict)  # a user's own judge option
    swept = _run(folder, "sweep.py", "-m", "generator=extractive", "judge=lexical,strict", "k=2", "dataset=native",
                 "dataset.path=data")
    assert swept.returncode == 0, swept.stderr[-3000:]
    return folder


@pytest.fixture(scope="module")
def tracker(project) -> MlflowTracker:
    mlruns = project / "mlruns"
    return MlflowTracker(f"sqlite:///{mlruns / 'mlflow.db'}", "ragsweep", str(mlruns / "artifacts"))


@pytest.fixture(scope="module")
def exported(project, tracker):
    """`ragsweep best --metric faithfulness --name judged`: the lexical run wins the tie."""
    return best(tracker, "faithfulness", project, "judged")


def _run_id(tracker: MlflowTracker, judge: str) -> str:
    runs = finished_jobs(tracker)
    return runs.run_id[runs[param("judge")] == judge].item()


@pytest.mark.slow
def test_the_sweeps_summary_shows_each_runs_judge_and_that_the_judges_differ(project):
    summary = next((project / "outputs" / "multirun").glob("*/summary.md")).read_text()
    header = next(line for line in summary.splitlines() if line.startswith("| rank "))
    columns = [cell.strip() for cell in header.strip("|").split("|")]
    # ranked by token_iou (the default): the judge and its judged metrics close the table, failure rate last
    assert columns[-8:] == ["judge", "faithfulness", "groundedness", "answer_relevance", "triad_overall",
                            "judge_failure_rate", "reused", "run_id"]
    assert re.search(rf"\| {re.escape(LEXICAL)} +\|", summary) and re.search(rf"\| {re.escape(STRICT)} +\|", summary)
    assert ("Not comparable: judged metrics here come from 2 different judges (lexical (AUC not measured, unvalidated); "
            "strict (AUC 0.61))") in summary
    csv = pd.read_csv(next((project / "outputs" / "multirun").glob("*/summary.csv")))
    assert sorted(csv.judge) == [LEXICAL, STRICT] and (csv.judge_failure_rate == 0).all()


@pytest.mark.slow
def test_best_ranks_by_a_judged_metric_and_records_the_winners_judge(project, tracker, exported, caplog):
    assert exported.table.label.str.contains("judge=lexical").tolist() == [True, False]
    manifest = json.loads(exported.manifest.read_text())
    assert manifest["judge"] == {"name": "lexical", "target": "ragsweep.judging.lexical.LexicalJudge",
                                 "settings": {"number_weight": "2.0", "threshold": "0.5"}, "auc": None}
    assert manifest["metrics"]["faithfulness"] == 1.0 and manifest["metrics"]["faithfulness_micro"] == 1.0
    assert manifest["metrics"]["judge_failure_rate"] == 0.0 and "triad_overall_std" in manifest["metrics"]
    questions = [json.loads(line)["metrics"] for line in exported.questions.read_text().splitlines()]
    assert all(q["faithfulness"] == 1.0 and q["claims_per_answer"] == 1.0 for q in questions)  # one sentence each
    table = judges.summary_table(exported.table, "faithfulness")  # what `ragsweep best` prints
    assert table.columns[:7].tolist() == ["rank", "config", "status", "generator", "judge", "faithfulness",
                                          "judge_failure_rate"]
    assert table.judge.tolist() == [LEXICAL, STRICT] and "groundedness" in table and "token_iou" in table
    with caplog.at_level("WARNING"):
        micro = best(tracker, "faithfulness_micro", project, "micro")
    assert micro.table.label.str.contains("judge=lexical").tolist() == [True, False]
    assert "ranked by faithfulness_micro across 2 judges (lexical (AUC not measured, unvalidated); strict (AUC 0.61))" in caplog.text


@pytest.mark.slow
def test_a_verify_rerun_repeats_every_judged_number_and_its_judge(project, exported):
    again = rerun(project, exported.config)
    manifest = read_manifest(exported.config)
    table = compare(manifest["metrics"], again.metrics)
    assert table.ok.all(), table[~table.ok]
    assert {"faithfulness_micro", "groundedness_micro", "judge_failure_rate_support", "triad_good"} <= set(table.metric)
    assert str(again.judge) == LEXICAL and again.judge.same_judge(JudgeInfo.from_dict(manifest["judge"]))


@pytest.mark.slow
def test_the_gate_guards_judged_metrics_of_one_judge_and_refuses_two(project, tracker, exported):
    manifest = read_manifest(exported.config)
    baseline = exported_questions(exported.config, manifest)
    same = job_result(tracker, _run_id(tracker, "lexical"), "--run")
    assert judge_line(manifest, same["judge"], ["faithfulness", "token_iou"]) == (
        "faithfulness judged by lexical (AUC not measured, unvalidated) in both runs")
    metrics = guarded_metrics("faithfulness,groundedness", manifest)
    table = gate_table(manifest["metrics"], same["metrics"], baseline, same["per_query"], metrics,
                       parse_max_drop("5%"), 0.05, samples=200)
    assert table.ok.all() and table.paired.tolist() == [3, 3]
    other = job_result(tracker, _run_id(tracker, "strict"), "--run")
    assert str(other["judge"]) == STRICT
    with pytest.raises(ResultsError) as refused:
        judge_line(manifest, other["judge"], ["token_iou", "faithfulness"])
    assert str(refused.value) == (
        "--metrics faithfulness: the baseline was judged by lexical (AUC not measured, unvalidated) and the current run by "
        "strict (AUC 0.61) (threshold 0.5 vs 0.9); judged metrics of different judges do not compare, so gate them "
        "against a run of the same judge or export a new baseline")
    assert judge_line(manifest, other["judge"], ["token_iou"]) is None  # retrieval metrics: the judge is irrelevant


@pytest.mark.slow
def test_the_report_shows_each_judge_and_never_tests_one_judge_against_another(project, tracker):
    page = write_report(tracker, "faithfulness", project / "judged.html", bootstrap_samples=200).path.read_text()
    assert "<th>judge</th>" in page and f"<td>{LEXICAL}</td>" in page and f"<td>{STRICT}</td>" in page
    assert "<b>Not comparable: judged metrics here come from 2 different judges" in page
    assert "Judged answers and the judges that scored them" in page and "faithfulness_micro 95% CI (Wilson)" in page
    # three claims, all supported: Wilson's interval for 3 of 3 is [0.4385, 1]
    assert "<td>[0.4385, 1.0000]</td>" in page
    assert f"<td>not comparable: judged by {STRICT}, the best by {LEXICAL}</td>" in page
    assert "paired bootstrap on faithfulness; 2 different judges, not comparable" in page
    spans = write_report(tracker, "token_iou", project / "spans.html", bootstrap_samples=200).path.read_text()
    assert "Judged answers and the judges that scored them" in spans and "not comparable: judged by" not in spans


@pytest.mark.slow
def test_the_notebook_shows_the_judge_beside_judged_metrics(project, run_notebook, monkeypatch):
    monkeypatch.setenv("RAGSWEEP_METRIC", "faithfulness")
    cells = run_notebook(project)
    printed = "".join(o.get("text", "") for cell in cells for o in cell.outputs)
    tables = ["".join(o.get("data", {}).get("text/html", "") for o in cell.outputs) for cell in cells]
    assert "Not comparable: judged metrics here come from 2 different judges" in printed
    assert "; judge lexical (AUC not measured, unvalidated)" in printed  # the drill-down's best run
    assert re.search(r"<th>faithfulness</th>\s*<th>judge</th>", tables[1])  # the judge beside the metric
    assert STRICT in tables[1] and "<th>hints</th>" in tables[4]
    assert "faithfulness_micro" in tables[-1] and "judge_failure_rate_support" in tables[-1] and LEXICAL in tables[-1]


def test_a_judged_metric_without_a_judge_is_refused_as_an_answer_metric_without_a_generator(store):
    with pytest.raises(ResultsError, match="or with a generator and a judge faithfulness, groundedness, "):
        best(store.tracker, "faithfulnes", store.root)
    store.job("chunker=fixed,k=3", [0.5, 0.5])
    with pytest.raises(ResultsError, match="no run has the metric 'faithfulness'"):
        best(store.tracker, "faithfulness", store.root)
    judged = store.job("generator=extractive,k=3", [0.2, 0.2], dataset="other", answers=[0.5, 0.5])
    for name in ("faithfulness", "citation_accuracy"):
        store.tracker.client().log_metric(judged, name, 0.5)  # the column exists, on another dataset
    store.job("generator=extractive,k=5", [0.2, 0.2], answers=[0.5, 0.5])  # the newest: sotu_qa, no judge
    with pytest.raises(ResultsError, match=re.escape(
            "no FINISHED run on dataset sotu_qa has faithfulness: judged metrics need a generator and a judge "
            "(python sweep.py -m generator=extractive judge=lexical)")):
        best(store.tracker, "faithfulness", store.root)
    cite = ("has citation_accuracy: citation metrics need a judge and a generator prompted to cite its passages "
            "(python sweep.py -m generator=llama_cpp generator.prompt=qa_cite judge=lexical)")
    with pytest.raises(ResultsError, match=re.escape(cite)):
        best(store.tracker, "citation_accuracy", store.root)
    assert not (store.root / "conf" / "best").exists()


def test_judged_metrics_are_guarded_per_question_but_micro_averages_are_not():
    manifest = {"metric": "faithfulness", "metrics": {"token_iou": 0.5, "faithfulness": 0.9,
                                                      "faithfulness_micro": 0.8, "judge_failure_rate": 0.0}}
    assert guarded_metrics(None, manifest) == ["faithfulness"]
    with pytest.raises(ResultsError, match="no per-question values .*; guard faithfulness instead"):
        guarded_metrics("faithfulness_micro", manifest)
    with pytest.raises(ResultsError, match="choose from token_iou, faithfulness$"):  # lower is better: not gated
        guarded_metrics("judge_failure_rate", manifest)
    with pytest.raises(ResultsError, match="choose from token_iou$"):  # a baseline without a judge
        guarded_metrics("faithfulness", {"metric": "token_iou", "metrics": {"token_iou": 0.5}})


def test_a_rise_of_the_judge_failure_rate_is_flagged_like_the_generation_error_rate():
    assert error_rate_note({"judge_failure_rate": 0.01}, {"judge_failure_rate": 0.01}) == (
        "judge_failure_rate (lower is better): recorded 0.0100, current 0.0100")
    both = error_rate_note({"generation_error_rate": 0.0, "judge_failure_rate": 0.0},
                           {"generation_error_rate": 0.0, "judge_failure_rate": 0.04}).splitlines()
    assert both == ["generation_error_rate (lower is better): recorded 0.0000, current 0.0000",
                    "WARNING: judge_failure_rate (lower is better): recorded 0.0000, current 0.0400; it rose: more "
                    "judge calls failed, and the judged metrics above leave them out"]


LEXICAL_PARAMS = {"judge": "lexical", "judge._target_": "ragsweep.judging.lexical.LexicalJudge",
                  "judge.threshold": "0.5", "judge.number_weight": "2.0", "judge.max_failure_rate": "0.05",
                  "judge.auc": "None"}


def test_a_judge_read_from_mlflow_params_equals_the_one_read_from_its_config():
    logged = from_params(LEXICAL_PARAMS, {"judge_failure_rate": 0.0, "judge_auc": 0.52})
    config = {"judge": {"_target_": "ragsweep.judging.lexical.LexicalJudge", "threshold": 0.5, "number_weight": 2.0,
                        "max_failure_rate": 0.2, "auc": 0.52}}  # another failure budget scores the same
    assert from_config(config, {"judge": "lexical"}, {"judge_failure_rate": 0.0}) == logged
    assert str(logged) == "lexical (AUC 0.52, unvalidated)" and JudgeInfo.from_dict(logged.to_dict()) == logged
    labelled = from_params({**LEXICAL_PARAMS, "judge.labels": "labels.jsonl"},
                           {"judge_failure_rate": 0.0, "judge_auc": 0.52})
    assert labelled == logged  # people's labels correct the judge's numbers beside them, they move none
    copy = from_config(config, {"judge": "mine"}, {"judge_failure_rate": 0.0})
    assert copy.same_judge(logged) and str(copy) == "mine (AUC 0.52, unvalidated)"  # a copy under another name: the same judge
    assert from_params(LEXICAL_PARAMS, {}) is None  # no judge_failure_rate: no judge ran (judge=none, retrieval only)
    assert from_config({"k": 3}, {"judge": "lexical"}, {"judge_failure_rate": 0.0}) is None  # no generator: no judge


def test_judges_differing_only_in_speed_are_the_same_judge():
    lexical = from_params(LEXICAL_PARAMS, {"judge_failure_rate": 0.0})
    faster = from_params({**LEXICAL_PARAMS, "judge.batch_size": "64", "judge.members.trained.threads": "2"},
                         {"judge_failure_rate": 0.0})
    assert faster == lexical
    assert from_params({**LEXICAL_PARAMS, "judge.members.trained.epochs": "2"}, {"judge_failure_rate": 0.0}) != lexical


def test_two_judges_of_one_name_are_told_apart_by_their_settings():
    lexical = from_params(LEXICAL_PARAMS, {"judge_failure_rate": 0.0})
    stricter = from_params({**LEXICAL_PARAMS, "judge.threshold": "0.9"}, {"judge_failure_rate": 0.0})
    assert not lexical.same_judge(stricter) and lexical.differences(stricter) == "threshold 0.5 vs 0.9"
    assert judge_labels([lexical, stricter, None, lexical]) == [
        "lexical threshold=0.5 (AUC not measured, unvalidated)", "lexical threshold=0.9 (AUC not measured, unvalidated)", "none",
        "lexical threshold=0.5 (AUC not measured, unvalidated)"]
    assert judge_labels([lexical]) == [LEXICAL]


def test_a_table_without_a_judged_run_is_the_plain_summary_table():
    runs = pd.DataFrame({"run_id": ["a", "b"], "status": ["FINISHED"] * 2, "name": ["k=3", "k=5"],
                         "label": ["k=3", "k=5"],
                         "token_iou": [0.5, 0.6], param("judge"): ["lexical", "lexical"]})  # retrieval only
    assert judges.summary_table(runs, "token_iou").equals(unjudged_summary_table(runs, "token_iou"))
    assert judges.judge_notes(runs) == []


def test_one_measured_judge_is_named_with_its_auc_and_no_calibration_hint():
    runs = pd.DataFrame({**{param(key): [value] for key, value in LEXICAL_PARAMS.items()},
                         "judge_failure_rate": [0.0], "judge_auc": [0.72], "faithfulness": [0.8]})
    assert judges.judge_notes(runs) == [
        "Judged metrics (faithfulness) are scored by judge lexical (AUC 0.72): AUC is its ROC AUC on labelled claims "
        "of a corpus it was not fitted on (0.5 is chance); judge_failure_rate is the share of its calls that failed, "
        "left out of the means."]


@pytest.mark.parametrize(("auc", "shown"), [(0.599, "AUC 0.60, unvalidated"), (0.6, "AUC 0.60"), (None,
                                            "AUC not measured, unvalidated")])
def test_a_judge_below_the_held_out_floor_is_shown_unvalidated_with_how_to_measure_it(auc, shown):
    runs = pd.DataFrame({**{param(key): [value] for key, value in LEXICAL_PARAMS.items()},
                         "judge_failure_rate": [0.0], "judge_auc": [auc], "faithfulness": [0.8]})
    (note,) = judges.judge_notes(runs)
    assert f"judge lexical ({shown})" in note
    assert ("`ragsweep calibrate --judge lexical` measures a judge on held-out claims" in note) == (auc != 0.6)
    assert judges.judge_labels(judges.run_judges(runs)) == [f"lexical ({shown})"]


def test_runs_that_answered_unjudged_say_how_to_add_and_check_judged_metrics():
    runs = pd.DataFrame({"run_id": ["a"], "status": ["FINISHED"], param("generator"): ["extractive"],
                         "token_iou": [0.5]})
    assert judges.judge_notes(runs) == [judges.judge_off_note()]
    assert "judge=trained_mpnet (held-out AUC 0.765" in judges.judge_off_note()
    assert "ragsweep calibrate --judge" in judges.judge_off_note()
    assert judges.judge_notes(runs.assign(**{param("generator"): ["none"]})) == []


@pytest.mark.slow
def test_the_commands_print_the_judge_and_refuse_to_gate_across_judges(project, tracker):
    from ragsweep import cli

    printed = _run(project, "-m", "ragsweep.cli", "best", "--metric", "faithfulness", "--name", "cli", "--top", "2")
    assert printed.returncode == 0, printed.stderr[-2000:]
    assert "ranked by faithfulness across 2 judges" in printed.stderr + printed.stdout
    assert f"| {LEXICAL}" in printed.stdout and "judge_failure_rate" in printed.stdout
    assert "Not comparable: judged metrics here come from 2 different judges" in printed.stdout
    code = cli.main(["--project", str(project), "--tracking-uri", tracker.uri, "gate", "--baseline",
                     str(project / "conf" / "best" / "cli.yaml"), "--run", _run_id(tracker, "strict"),
                     "--allow-other-config", "--metrics", "faithfulness"])
    assert code == 2  # the message itself is checked in test_the_gate_guards_judged_metrics_of_one_judge_and_refuses_two


def test_runs_whose_relevance_judge_disagrees_with_the_spans_are_named_unvalidated():
    runs = pd.DataFrame({"run_id": ["a", "b", "c"], "status": ["FINISHED"] * 3,
                         "label": ["relevance_judge=lexical", "relevance_judge=span_trained", "k=3"],
                         "context_relevance_judged": [0.4, 0.5, None], "context_relevance_auc": [0.55, 0.93, None]})
    (note,) = judges.judge_notes(runs)
    assert note.startswith("context_relevance_judged is unvalidated in 1 of 2 runs")
    assert "relevance_judge=lexical" in note and "span_trained" not in note
    assert judges.judge_notes(runs.assign(context_relevance_auc=[0.61, 0.93, None])) == []
