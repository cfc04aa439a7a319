"""A tiny native dataset written into a test project: documents, and questions whose answers are spans."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path


def write_native_dataset(folder: Path, texts: Mapping[str, str], questions: Sequence[tuple[str, str, str]]) -> Path:
    """`folder/data`: `texts` as documents and each (document, question, answer) as a query referencing the
    answer's first occurrence in its document."""
    data = folder / "data"
    (data / "documents").mkdir(parents=True)
    for name, text in texts.items():
        (data / "documents" / f"{name}.txt").write_text(text)
    with open(data / "queries.jsonl", "w") as out:
        for number, (doc, question, answer) in enumerate(questions):
            start = texts[doc].index(answer)
            out.write(json.dumps({"id": f"q{number}", "question": question, "answers": [answer], "references": [
                {"doc_id": doc, "start": start, "end": start + len(answer)}]}) + "\n")
    return data
