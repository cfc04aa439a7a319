"""The corrected paired difference `best`, `report` and `gate` show, worked out by hand on four questions."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ragsweep.results.corrected import ComparedRun, difference_line, paired_corrected, ranking_metric
from ragsweep.results.gate import corrections, gate_table
from ragsweep.results.gate_rows import parse_max_drop

RATES = {"mu0": 0.2, "var0": 0.01, "n0": 4, "mu1": 0.7, "var1": 0.02, "n1": 6}  # J = 0.5, 10 labels
Z95 = 1.959963984540054


def _run(name: str, values: dict[str, float], rates: dict | None = RATES, metric: str = "faithfulness") -> ComparedRun:
    summary = {} if rates is None else {f"{metric}_corrected": {"value": 0.5, "ci95": [0.4, 0.6], "n": len(values),
                                                                  "n_labelled": 10, "error_rates": rates}}
    return ComparedRun(name, summary, {q: {metric: v, "token_iou": 0.5} for q, v in values.items()})


# A answered q0..q3 and q4 (which B did not); B lists its questions in another order
A = {"q0": 1.0, "q1": 0.5, "q2": 0.5, "q3": 1.0, "q4": 0.0}
B = {"q3": 0.5, "q2": 0.0, "q1": 0.5, "q0": 0.5}


def test_the_difference_pairs_questions_by_id_and_corrects_by_the_shared_rates():
    found = paired_corrected("faithfulness", _run("A", A), _run("B", B))
    # paired differences q0..q3: 0.5, 0, 0.5, 0.5 -> mean 0.375, s2_D = (3 * 0.125^2 + 0.375^2) / 3 = 0.0625
    # A − B = 0.375 / J = 0.75;  Var = (0.0625 / 4 + 0.75^2 * (0.01 + 0.02)) / 0.5^2 = 0.13
    difference = found.difference
    assert difference.value == pytest.approx(0.75) and (difference.n, difference.n_labelled) == (4, 10)
    assert difference.half_width() == pytest.approx(Z95 * math.sqrt(0.13))  # 0.7067
    assert difference_line(found) == ("A − B on faithfulness = 0.75 ± 0.71 with 10 labels "
                                      "(corrected by people's labels)")
    # z = 0.75 / sqrt(0.13) = 2.0801 -> two-sided p = 0.0375
    assert found.p_value == pytest.approx(0.0375, abs=1e-4) and found.note == ""


def test_a_narrow_interval_keeps_its_digits_and_no_spread_gives_p_0_or_1():
    still = {q: 1.0 for q in B}
    same = paired_corrected("faithfulness", _run("A", still), _run("B", still))
    assert same.difference.value == 0 and same.p_value == 1.0
    assert difference_line(same) == ("A − B on faithfulness = 0.0000 ± 0.0000 with 10 labels "
                                     "(corrected by people's labels)")
    exact = paired_corrected("faithfulness", _run("A", {q: 1.0 for q in B}), _run("B", {q: 0.9 for q in B}))
    # every question 0.1 apart: s2_D = 0, Var = (0.2^2 * 0.03) / 0.25 -> half 1.96 * 0.0693
    assert exact.difference.value == pytest.approx(0.2) and exact.p_value < 0.01


def test_groundedness_is_corrected_alike_and_other_metrics_are_not():
    found = paired_corrected("groundedness", _run("A", A, metric="groundedness"), _run("B", B, metric="groundedness"))
    assert found.difference.value == pytest.approx(0.75)
    assert paired_corrected("token_iou", _run("A", A), _run("B", B)).difference is None


@pytest.mark.parametrize(("a_rates", "b_rates", "note"), [
    (None, None, ""),  # no labels anywhere: nothing to say
    (RATES, None, "B has no faithfulness_corrected (run it with judge.labels=FILE): no corrected difference"),
    (RATES, {**RATES, "mu1": 0.8}, "faithfulness_corrected of A and B rest on different error rates"),
])
def test_runs_that_cannot_be_corrected_alike_say_why(a_rates, b_rates, note):
    found = paired_corrected("faithfulness", _run("A", A, a_rates), _run("B", B, b_rates))
    assert found.difference is None and found.p_value is None and found.note.startswith(note)
    assert difference_line(found) == found.note


def test_fewer_than_two_shared_questions_give_no_difference():
    found = paired_corrected("faithfulness", _run("A", {"q0": 1.0, "q9": 0.0}), _run("B", {"q0": 0.5}))
    assert found.difference is None and "needs 2 or more finite values" in found.note


def test_runs_rank_by_the_corrected_value_only_when_every_judged_run_carries_it(caplog):
    runs = pd.DataFrame({"faithfulness": [0.9, 0.8, None], "faithfulness_corrected": [0.7, 0.75, None]})
    assert ranking_metric(runs, "faithfulness") == "faithfulness_corrected"  # the run without a judge has neither
    assert ranking_metric(runs, "token_iou") == "token_iou"
    assert ranking_metric(runs.drop(columns="faithfulness_corrected"), "faithfulness") == "faithfulness"
    with caplog.at_level("WARNING"):
        partly = ranking_metric(runs.assign(faithfulness_corrected=[0.7, None, None]), "faithfulness")
    assert partly == "faithfulness" and "1 of 2 configurations carry faithfulness_corrected" in caplog.text


@pytest.mark.parametrize(("max_drop", "significance", "verdict"), [
    ("5%", 0.05, "FAIL: dropped more than 5%, worse at p < 0.05"),  # 0.75 > 5% of 0.6; p 0.0375
    ("0.8", 0.05, "FAIL: worse at p < 0.05"),  # an absolute 0.8 allows the drop of 0.75
    ("0.8", 0.01, "ok"),  # and p 0.0375 is not below 0.01: the 99% interval reaches 0
])
def test_the_gate_judges_a_labelled_metric_by_its_corrected_difference(max_drop, significance, verdict):
    baseline, now = _run("baseline", A), _run("current", B)  # current − baseline = −0.75 ± 0.71 (as A − B above)
    manifest = {"metrics": {"faithfulness": 0.75, "token_iou": 0.5},
                "corrected": {"faithfulness_corrected": {**baseline.summary["faithfulness_corrected"], "value": 0.6}}}
    current = {"per_query": now.per_query, "corrected": now.summary}
    found = corrections(manifest, current, baseline.per_query, ["faithfulness", "token_iou"])
    assert list(found) == ["faithfulness"]  # token_iou is no judge's share
    assert difference_line(found["faithfulness"]) == ("current − baseline on faithfulness = -0.75 ± 0.71 with 10 "
                                                      "labels (corrected by people's labels)")
    table = gate_table(manifest["metrics"], {"faithfulness": 0.375, "token_iou": 0.5}, baseline.per_query,
                       now.per_query, ["faithfulness", "token_iou"], parse_max_drop(max_drop), significance,
                       samples=200, corrected=found)
    row = table.iloc[0]
    assert (row.recorded, row.current, row.change, row["change %"]) == (0.6, 0.5, -0.75, "-125.0%")
    assert row["p-value"] == pytest.approx(0.0375, abs=1e-4) and row.labels == 10 and row.paired == 4
    assert row.verdict == verdict
    assert table.labels.iloc[1] == "" and table.verdict.iloc[1] == "ok"  # token_iou: the bootstrap, unchanged


def test_the_gate_keeps_the_bootstrap_when_the_baseline_carries_no_labels():
    baseline, now = _run("baseline", A), _run("current", B)
    found = corrections({"metrics": {}}, {"per_query": now.per_query, "corrected": now.summary}, baseline.per_query,
                        ["faithfulness"])
    assert found["faithfulness"].difference is None and found["faithfulness"].note.startswith(
        "baseline has no faithfulness_corrected")
    table = gate_table({"faithfulness": 0.75}, {"faithfulness": 0.375}, baseline.per_query, now.per_query,
                       ["faithfulness"], parse_max_drop("5%"), 0.05, samples=200, corrected=found)
    assert "labels" not in table and table.paired.iloc[0] == 4
