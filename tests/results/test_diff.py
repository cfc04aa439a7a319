"""`ragsweep diff`'s rendering of one side of a question."""

from __future__ import annotations

import math

import pandas as pd

from ragsweep.results.diff import _side_html


def test_a_side_without_an_answer_shows_its_spans_whether_pandas_holds_none_or_nan():
    """A run that generated nothing against one that did: pandas fills the missing answers with None or NaN."""
    for missing in (None, math.nan):
        row = pd.Series({"a_answer": missing, "a_spans": "doc[0:10] <b>", "a_metrics": {"mrr": 0.5}})
        assert _side_html(row, "a") == "<small>doc[0:10] &lt;b&gt;</small><br><i>mrr 0.5000</i>"
    row = pd.Series({"a_answer": "x < y", "a_spans": "doc[0:10]", "a_metrics": {}})
    assert _side_html(row, "a") == "x &lt; y<br><small>doc[0:10]</small>"
