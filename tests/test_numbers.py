"""The one rule for a number read from text: finite, or None."""

from __future__ import annotations

import math

import pytest

from ragsweep.numbers import finite_number


@pytest.mark.parametrize(("value", "number"), [("3", 3.0), ("0.5", 0.5), (" 2 ", 2.0), (2, 2.0), ("1e-3", 0.001),
                                               ("-4", -4.0)])
def test_a_finite_number_reads_as_itself(value, number):
    assert finite_number(value) == number


@pytest.mark.parametrize("value", ["ten", "", None, math.nan, "nan", "inf", "-inf", math.inf, [1]])
def test_what_is_not_a_finite_number_is_none(value):
    assert finite_number(value) is None
