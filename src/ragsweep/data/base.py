"""The dataset stage's contract: a loader turns files into a `Dataset`, and its error.

A loader never scores anything. Each problem is reported as a `DatasetError` naming the file, the record and
the field, so a user can fix their data without reading our code. What loaders share lives beside this:
`data.reading` (files, records and fields), `data.question_choice` (the questions a run asks),
`data.assembly` (the dataset, its ids checked) and `data.loading` (a loader's dataset, once per process).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ragsweep.types import Dataset


class DatasetError(ValueError):
    """Bad input data; the message names the file, record and field, and how to fix it."""


@runtime_checkable
class DatasetLoader(Protocol):
    def load(self) -> Dataset: ...
