"""The dataset stage's contract: a loader turns files into a `Dataset`, and its error.

A loader never scores anything. Each problem is reported as a `DatasetError` naming the file, the record and
the field, so a user can fix their data without reading our code. What loaders share lives beside this:
`data.reading` (files, records and fields), `data.question_choice` (the questions a run asks),
`data.assembly` (the dataset, its ids checked) and `data.loading` (a loader's dataset, once per process).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ragsweep.contract import PRELOAD, VERSION, OptionalAttribute
from ragsweep.types import Dataset


class DatasetError(ValueError):
    """Bad input data; the message names the file, record and field, and how to fix it."""


@runtime_checkable
class DatasetLoader(Protocol):
    """Reads its files into a `Dataset`. Its public attributes are its settings: a process keeps its dataset
    while they and its files are unchanged (`data.loading.load_once`)."""

    def load(self) -> Dataset: ...


# What the engine and the commands read on a loader beyond the protocol, when it has it (`ragsweep.contract`); not
# in the protocol, which `isinstance` checks in full (`data.loading.loaded`).
OPTIONAL = {
    "path": OptionalAttribute("text", "the file or folder it reads: its dataset is read again when a file under it "
                                      "changes size or time (`data.loading`)"),
    "read_documents": OptionalAttribute("method", "read_documents() -> {doc_id: Document}: the documents alone, which "
                                                  "`ragsweep generate` reads from a folder without questions yet"),
    "preload": PRELOAD,
    "version": VERSION,
}
