"""The pure parts of the results commands: filters, rankings, Pareto fronts, metric comparisons."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from ragsweep.results.rerun import compare
from ragsweep.results.plots import pareto_front
from ragsweep.tracking.conditions import where
from ragsweep.tracking.runs import markdown, ranked
from ragsweep.tracking.table import param


@pytest.fixture
def runs() -> pd.DataFrame:
    return pd.DataFrame({
        "name": ["a", "b", "c", "d"],
        param("k"): ["5", "10", "3", "20"],  # stores keep params as strings
        param("store._target_"): ["numpy", "qdrant", "numpy", "numpy"],
        "recall": [0.5, 0.9, math.nan, 0.7],
    })


def test_where_compares_numbers_as_numbers(runs):
    assert list(where(runs, "params.k <= 10").index) == [0, 1, 2]  # as strings, "20" <= "10" would hold
    assert list(where(runs, "params.k > 3 and params.store._target_ = numpy").index) == [0, 3]
    assert list(where(runs, "metrics.recall >= 0.7").index) == [1, 3]  # NaN (a failed run) never passes
    assert where(runs, None) is runs


def test_where_compares_numbers_by_value_and_text_as_written(runs):
    assert list(where(runs, "params.k = 5.0").index) == [0]  # "5" and "5.0" are the same number
    assert list(where(runs, "params.k != 10").index) == [0, 2, 3]
    assert list(where(runs, "params.store._target_ = 'qdrant'").index) == [1]  # quotes are optional
    assert list(where(runs, 'params.`store._target_` != "qdrant"').index) == [0, 2, 3]  # MLflow's backticks
    assert list(where(runs, "params.k > 3 AND metrics.recall < 0.8").index) == [0, 3]


@pytest.mark.parametrize(("condition", "message"), [
    ("params.k ~ 3", "cannot read 'params.k ~ 3'"),
    ("params.k <=", "cannot read 'params.k <='"),
    ("params.k = 3 or params.k = 5", "cannot read 'params.k = 3 or params.k = 5'"),  # was: k == "3 or ..."
    ("params.k = 3 and", "cannot read 'params.k = 3 and'"),
    ("", "--where is empty"),
    ("params.x = 1", "no column 'params.x'"),
    ("k <= 10", "no column 'k'; did you mean params.k?"),
    ("params.k <= ten", "params.k holds numbers (3, 5, 10, 20): 'ten' is not a number"),  # matched every row
    ("metrics.recall > high", "metrics.recall holds numbers"),
    ("params.store._target_ > numpy", "params.store._target_ holds text (numpy, qdrant): compare it with = or !="),
])
def test_where_refuses_what_it_cannot_read(runs, condition, message):
    with pytest.raises(ValueError, match=re.escape(message)) as refused:
        where(runs, condition)
    assert "\n" not in str(refused.value)  # the CLI prints it as one line


def test_a_where_it_cannot_read_names_the_syntax_and_the_params(runs):
    with pytest.raises(ValueError) as refused:
        where(runs, "params.k ~ 3")
    assert "<column> <op> <value>" in str(refused.value) and "joined by 'and'" in str(refused.value)
    assert "params: k, store._target_" in str(refused.value)


def test_ranked_puts_the_best_first_and_failed_runs_last(runs):
    assert list(ranked(runs, "recall")["name"]) == ["b", "d", "a", "c"]
    with pytest.raises(ValueError, match="no run has the metric 'ndcg'"):
        ranked(runs, "ndcg")


def test_pareto_front_by_hand():
    cost = np.array([1.0, 2.0, 3.0, 2.0, 1.0])
    quality = np.array([0.5, 0.7, 0.9, 0.6, 0.4])
    # (2, 0.6) is beaten by (2, 0.7); (1, 0.4) by (1, 0.5); the rest trade cost for quality
    assert pareto_front(cost, quality).tolist() == [True, True, True, False, False]


def test_compare_requires_equal_numbers():
    recorded = {"recall": 0.8, "ndcg": 0.6}
    assert compare(recorded, {"recall": 0.8, "ndcg": 0.6}).ok.all()
    assert compare(recorded, {"recall": 0.8, "ndcg": 0.6 - 1e-15}).ok.tolist() == [True, False]
    assert not compare(recorded, {}).ok.any()  # a metric missing from the rerun fails


def test_markdown_table():
    text = markdown(pd.DataFrame({"config": ["k=5"], "recall": [0.5]}))
    assert text.splitlines() == ["| config | recall |", "|--------|--------|", "| k=5    | 0.5    |"]


@pytest.mark.parametrize(("varied", "expected"), [
    ({param("generator"): ["extractive", "llama_cpp"]}, "answer_f1"),
    ({param("generator.prompt"): ["qa", "qa_cite"]}, "answer_f1"),
    ({param("reranker"): ["none", "embedding"]}, "ndcg"),
    ({param("reranker.candidates"): ["20", "50"]}, "ndcg"),
    ({param("chunker"): ["recursive", "fixed"]}, "token_iou"),
    ({param("judge"): ["lexical", "embedding"]}, "token_iou"),  # never a judged metric
])
def test_a_sweep_ranks_by_the_metric_of_the_stage_it_varies(varied, expected):
    from ragsweep.tracking.runs import default_ranking_metric

    runs = pd.DataFrame({param("k"): ["5", "5"], **varied, "token_iou": [0.3, 0.3],
                         "ndcg": [0.5, 0.6], "answer_f1": [0.2, 0.4]})
    assert default_ranking_metric(runs) == expected
    assert default_ranking_metric(runs.drop(columns=["answer_f1", "ndcg"])) == "token_iou"


def test_a_tie_at_the_top_is_said_and_a_clear_winner_is_not():
    from ragsweep.tracking.runs import tie_note

    runs = pd.DataFrame({"name": ["b", "a", "c"], "token_iou": [0.31, 0.31, 0.2], "answer_f1": [0.1, 0.3, 0.2]})
    assert tie_note(runs, "token_iou") == ("note: the top 2 configurations tie on token_iou (0.3100) and are listed "
                                           "by name; rank by another metric to tell them apart")
    assert tie_note(runs, "answer_f1") is None
    assert tie_note(runs.iloc[:1], "token_iou") is None


def test_k_curves_are_named_by_what_tells_them_apart_not_by_their_overrides():
    from ragsweep.results.plots import k_curves

    # the recursive runs were given only k (recursive is the default): their label says nothing of the chunker
    runs = pd.DataFrame({"label": ["k=3", "k=5", "chunker=fixed,k=3", "chunker=fixed,k=5"],
                         param("k"): ["3", "5", "3", "5"],
                         param("chunker"): ["recursive", "recursive", "fixed", "fixed"],
                         param("chunker._target_"): ["a.Recursive", "a.Recursive", "a.Fixed", "a.Fixed"],
                         param("generator"): ["none"] * 4, "token_iou": [0.2, 0.1, 0.3, 0.25]})
    figure = k_curves(runs, "token_iou")
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == ["chunker=fixed", "chunker=recursive"]
    sizes = runs.assign(**{param("chunker"): "recursive", param("chunker.size"): ["200", "200", "400", "400"]})
    figure = k_curves(sizes, "token_iou")  # one option, two sizes: the setting tells the curves apart
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == [
        "chunker.size=400", "chunker.size=200"]


def test_every_point_of_the_latency_plot_is_labelled_and_no_label_covers_another():
    from ragsweep.results.plots import label_points, new_figure

    rng = np.random.default_rng(0)  # twelve configurations in two tight clusters, two of them at the same spot
    x = np.concatenate([rng.normal(40, 1, 6), rng.normal(900, 5, 6)])
    y = np.concatenate([rng.normal(0.30, 0.004, 6), rng.normal(0.35, 0.004, 6)])
    x[1], y[1] = x[0], y[0]
    figure, axes = new_figure(height=4.5)
    axes.scatter(x, y)
    label_points(axes, x, y, [str(i + 1) for i in range(12)])
    texts = axes.texts
    assert sorted(n for t in texts for n in t.get_text().split(",")) == sorted(str(i + 1) for i in range(12))
    assert "1,2" in [t.get_text() for t in texts]  # one spot, one label
    figure.tight_layout()
    figure.canvas.draw()
    boxes = [t.get_window_extent(figure.canvas.get_renderer()) for t in texts]
    assert all(box.width > 3 for box in boxes)
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]
