"""`--where`: the runs of a table meeting a condition on MLflow's columns (`params.*`, `metrics.*`, `tags.*`)."""

from __future__ import annotations

import math
import operator
import re

import pandas as pd

_COMPARISONS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "=": operator.eq,
                "!=": operator.ne, "<": operator.lt, ">": operator.gt}
_EQUALITY = {"=", "==", "!="}
# one value per term: a quoted string or one word, so `params.k = 3 or params.k = 5` cannot read as k == "3 or ..."
_CONDITION = re.compile(r"""^\s*([\w.`-]+)\s*(<=|>=|==|!=|=|<|>)\s*('[^']*'|"[^"]*"|[^\s'"<>=!][^\s'"]*)\s*$""")
_SYNTAX = ("write <column> <op> <value> joined by 'and', e.g. \"params.k <= 10 and params.chunker = fixed\" "
           "(ops: = != < <= > >=)")


def where(runs: pd.DataFrame, condition: str | None) -> pd.DataFrame:
    """Rows meeting `condition`, e.g. `params.k <= 10 and params.chunker = fixed`.

    Columns are MLflow's (`params.*`, `metrics.*`, `tags.*`). A column whose values are all numbers
    compares as numbers (MLflow keeps params as strings, so its own filter has "10" < "5") and
    refuses a value that is not one; a text column takes only = and !=. Anything it cannot read
    raises ValueError rather than match every row.
    """
    if condition is None:
        return runs
    if not condition.strip():
        raise ValueError(f"--where is empty; {_SYNTAX}")
    keep = pd.Series(True, index=runs.index)
    for part in re.split(r"\s+and\s+", condition.strip(), flags=re.IGNORECASE):
        match = _CONDITION.match(part)
        if not match:
            raise ValueError(f"--where: cannot read {part!r}; {_SYNTAX}; {_param_names(runs)}")
        column, op, value = match.group(1).replace("`", ""), match.group(2), match.group(3).strip("'\"")
        keep &= _term(runs, column, op, value)
    return runs[keep]


def _term(runs: pd.DataFrame, column: str, op: str, value: str) -> pd.Series:
    """Which rows meet one `column op value` term; ValueError when the term cannot mean anything."""
    if column not in runs:
        hint = f"did you mean params.{column}?" if f"params.{column}" in runs else _param_names(runs)
        raise ValueError(f"--where: no column {column!r}; {hint}")
    present = [cell for cell in runs[column] if not missing(cell)]
    numbers = [_number(cell) for cell in present]
    if present and None not in numbers:
        if _number(value) is None:
            raise ValueError(f"--where: {column} holds numbers ({_examples(numbers)}): {value!r} is not a number")
        compare = _COMPARISONS[op]
        return runs[column].map(lambda cell: not missing(cell) and bool(compare(_number(cell), _number(value))))
    if op not in _EQUALITY:
        raise ValueError(f"--where: {column} holds text ({_examples(present)}): compare it with = or !=, not {op}")
    return runs[column].map(lambda cell: (str(cell) == value) == (op != "!=") and not missing(cell))


def missing(cell) -> bool:
    """No value: a run without the column (NaN), or a param logged from a null config value."""
    return cell is None or cell == "None" or (isinstance(cell, float) and math.isnan(cell))


def _number(cell) -> float | None:
    try:
        number = float(cell)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _examples(values: list, most: int = 5) -> str:
    distinct = sorted(set(values))
    shown = [f"{v:g}" if isinstance(v, float) else str(v) for v in distinct[:most]]
    return ", ".join(shown) + (", ..." if len(distinct) > most else "")


def _param_names(runs: pd.DataFrame) -> str:
    names = sorted(c.removeprefix("params.") for c in runs.columns if c.startswith("params."))
    return f"params: {', '.join(names)}" if names else "no run logged params"
