"""chunking_evaluation's general benchmark: `corpora/<id>.md` plus `questions_df.csv`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ragsweep.data.base import DatasetError
from ragsweep.data.assembly import build_dataset
from ragsweep.data.question_choice import QuestionChoice
from ragsweep.data.reading import read_text, require_dir, require_file
from ragsweep.data.spans import SpanChecker, span_options
from ragsweep.types import Dataset, Document, Query, Span

COLUMNS = ("question", "references", "corpus_id")


class ChromaGeneralDataset:
    """Questions with character-span references into five corpora (MIT, Chroma 2024).

    Args:
        path: Folder with `corpora/*.md` and `questions_df.csv`.
        on_span_mismatch: A reference whose `content` differs from the corpus there: `error` or `repair`
            (move it to its text nearby), as for native.
        repair_window: How far a span may move under `repair`, in characters (>= 0).
        limit, sample, seed: Ask only the first `limit` questions, or `sample` drawn with `seed` (stratified
            by corpus); see `QuestionChoice`.
    """

    def __init__(self, path: str, on_span_mismatch: str = "error", repair_window: int = 10,
                 limit: int | None = None, sample: int | None = None, seed: int = 0) -> None:
        span_options(on_span_mismatch, repair_window)
        self.path = path
        self.on_span_mismatch = on_span_mismatch
        self.repair_window = repair_window
        self.questions = QuestionChoice(limit, sample, seed)

    def load(self) -> Dataset:
        folder = require_dir(self.path, "dataset.path", "corpora/*.md and questions_df.csv",
                             "chroma_general does not ship with ragsweep: set paths.data to the folder that holds "
                             "chroma_general/ (paths.data=/path/to/data; default ../shared/data), or ")
        corpora = sorted((folder / "corpora").glob("*.md"))
        if not corpora:
            raise DatasetError(f"{folder / 'corpora'}: no *.md corpora found")
        located = [(str(path), Document(path.stem, read_text(path))) for path in corpora]
        checker = SpanChecker({d.id: d for _, d in located}, self.on_span_mismatch, self.repair_window)
        questions = require_file(folder / "questions_df.csv", "the columns " + ", ".join(COLUMNS))
        questions = _read_questions(questions, checker)
        dataset = build_dataset("chroma_general", located, questions, str(folder), checker.finish(), checker.moved)
        return self.questions.apply(dataset)


def _read_questions(path: Path, checker: SpanChecker) -> list[tuple[str, Query]]:
    rows = list(csv.DictReader(read_text(path).splitlines(keepends=True)))
    missing = [column for column in COLUMNS if rows and column not in rows[0]]
    if missing:
        raise DatasetError(f"{path}: missing column(s) {missing}; expected {list(COLUMNS)}")
    queries = []
    for number, row in enumerate(rows):
        where = f"{path} row {number + 2}"  # +1 for the header, +1 for 1-based lines
        try:
            references = json.loads(row["references"])
        except json.JSONDecodeError as error:
            raise DatasetError(f"{where}: field 'references' is not JSON ({error.msg})") from None
        spans = tuple(
            checker.check(Span(row["corpus_id"], int(ref["start_index"]), int(ref["end_index"])), where,
                          f"reference {i}", ref.get("content"))
            for i, ref in enumerate(references)
        )
        if not spans:
            raise DatasetError(f"{where}: no references; every question needs at least one span")
        queries.append((where, Query(str(number), row["question"], spans, corpus=row["corpus_id"])))
    return queries
