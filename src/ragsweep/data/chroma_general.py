"""chunking_evaluation's general benchmark: `corpora/<id>.md` plus `questions_df.csv`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ragsweep.data.base import DatasetError, build_dataset, check_span, read_text, require_dir, require_file
from ragsweep.types import Dataset, Document, Query, Span

COLUMNS = ("question", "references", "corpus_id")


class ChromaGeneralDataset:
    """Questions with character-span references into five corpora (MIT, Chroma 2024).

    Args:
        path: Folder with `corpora/*.md` and `questions_df.csv`.
    """

    def __init__(self, path: str) -> None:
        self.path = path

    def load(self) -> Dataset:
        folder = require_dir(self.path, "dataset.path", "corpora/*.md and questions_df.csv")
        corpora = sorted((folder / "corpora").glob("*.md"))
        if not corpora:
            raise DatasetError(f"{folder / 'corpora'}: no *.md corpora found")
        located = [(str(path), Document(path.stem, read_text(path))) for path in corpora]
        documents = {document.id: document for _, document in located}
        questions = require_file(folder / "questions_df.csv", "the columns " + ", ".join(COLUMNS))
        return build_dataset("chroma_general", located, _read_questions(questions, documents), str(folder))


def _read_questions(path: Path, documents: dict[str, Document]) -> list[tuple[str, Query]]:
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
            check_span(
                Span(row["corpus_id"], int(ref["start_index"]), int(ref["end_index"])),
                documents,
                f"{where} reference {i}",
                ref.get("content"),
            )
            for i, ref in enumerate(references)
        )
        if not spans:
            raise DatasetError(f"{where}: no references; every question needs at least one span")
        queries.append((where, Query(str(number), row["question"], spans, corpus=row["corpus_id"])))
    return queries
