"""`--where`: the runs of a table (`tracking.table`) meeting a condition on `params.*`, `metrics.*` and `tags.*`, the
names MLflow's UI filters by too."""

from __future__ import annotations

import math
import operator
import re

import pandas as pd

from ragsweep.numbers import finite_number
from ragsweep.tracking.table import metric_names, param, param_keys, tag

_COMPARISONS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "=": operator.eq,
                "!=": operator.ne, "<": operator.lt, ">": operator.gt}
_EQUALITY = {"=", "==", "!="}
# one value per term: a quoted string or one word, so `params.k = 3 or params.k = 5` cannot read as k == "3 or ..."
_CONDITION = re.compile(r"""^\s*([\w.`-]+)\s*(<=|>=|==|!=|=|<|>)\s*('[^']*'|"[^"]*"|[^\s'"<>=!][^\s'"]*)\s*$""")
RECORD = ("run_id", "status", "start_time", "experiment_id")  # a run's own fields, named as they are
_SYNTAX = ("write <column> <op> <value> joined by 'and', e.g. \"params.k <= 10 and params.chunker = fixed\" "
           "(ops: = != < <= > >=)")


def where(runs: pd.DataFrame, condition: str | None) -> pd.DataFrame:
    """Rows meeting `condition`, e.g. `params.k <= 10 and params.chunker = fixed`.

    Columns are `params.<key>`, `metrics.<name>`, `tags.<key>` and `RECORD`'s. A column whose values are all numbers
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


def _column(runs: pd.DataFrame, name: str) -> str | None:
    """The table's column `name` means (`params.k`: the param k's), or None when the table has none."""
    kind, _, key = name.partition(".")
    found = {"params": param(key), "tags": tag(key),
             "metrics": key if key in metric_names(runs) else None}.get(kind, name if name in RECORD else None)
    return found if found in runs else None


def _term(runs: pd.DataFrame, name: str, op: str, value: str) -> pd.Series:
    """Which rows meet one `name op value` term; ValueError when the term cannot mean anything."""
    column = _column(runs, name)
    if column is None:
        hint = f"did you mean params.{name}?" if param(name) in runs else _param_names(runs)
        raise ValueError(f"--where: no column {name!r}; {hint}")
    present = [cell for cell in runs[column] if not missing(cell)]
    numbers = [finite_number(cell) for cell in present]
    if present and None not in numbers:
        if finite_number(value) is None:
            raise ValueError(f"--where: {name} holds numbers ({_examples(numbers)}): {value!r} is not a number")
        compare = _COMPARISONS[op]
        return runs[column].map(lambda cell: not missing(cell) and bool(compare(finite_number(cell),
                                                                                finite_number(value))))
    if op not in _EQUALITY:
        raise ValueError(f"--where: {name} holds text ({_examples(present)}): compare it with = or !=, not {op}")
    return runs[column].map(lambda cell: (str(cell) == value) == (op != "!=") and not missing(cell))


def missing(cell) -> bool:
    """No value: a run without the column (NaN), or a param logged from a null config value."""
    return cell is None or cell == "None" or (isinstance(cell, float) and math.isnan(cell))


def _examples(values: list, most: int = 5) -> str:
    distinct = sorted(set(values))
    shown = [f"{v:g}" if isinstance(v, float) else str(v) for v in distinct[:most]]
    return ", ".join(shown) + (", ..." if len(distinct) > most else "")


def _param_names(runs: pd.DataFrame) -> str:
    names = sorted(param_keys(runs))
    return f"params: {', '.join(names)}" if names else "no run logged params"
