"""A number read from text (a table's cell, a param as a store keeps it, a command-line value): one rule for every
reader, so none takes a missing, infinite or unreadable value for a number."""

from __future__ import annotations

import math
from typing import Any


def finite_number(value: Any) -> float | None:
    """`value` as a float when it reads as a finite number (`"3"`, `"0.5"`, `2`); None otherwise (`"ten"`, None,
    NaN, `"inf"`)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
