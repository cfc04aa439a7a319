"""A generated question set on disk: a `native` dataset (documents and queries.jsonl), the questions quoting their
evidence (questions.jsonl, for `dataset=files`) and its reports.

The set is written in a sibling folder and moved into place at the end, so a killed or failed run never leaves
half a dataset; a run that keeps no question writes only its reports.
"""

from __future__ import annotations

import bisect
import json
import os
import shutil
from pathlib import Path
from typing import Any

from ragsweep.questions.report import QuestionSetAudit
from ragsweep.questions.screening import Screened
from ragsweep.types import Document


def record(number: int, screened: Screened) -> dict[str, Any]:
    """A queries.jsonl line (the native format, plus how the question was made)."""
    draft = screened.draft
    return {"id": f"q{number:04d}", "question": draft.question,
            "references": [{**span.to_dict(), "content": None} for span, _ in screened.spans],
            "answers": [] if screened.answer_dropped else [draft.answer], "corpus": screened.attempt.passage.doc_id,
            "type": draft.type, "difficulty": draft.difficulty,
            "excerpt_similarity": [found.similarity for _, found in screened.spans]}


def write_dataset(out: Path, documents: dict[str, Document], records: list[dict[str, Any]],
                  report: QuestionSetAudit) -> None:
    """`out/documents/<id>.txt`, `queries.jsonl` (each span's `content` is the document's text there), the same
    questions with their evidence as quotes (`questions.jsonl`, as `dataset=files` reads them: any parser's text
    can be searched for them) and the reports. Written whole in a sibling folder first and moved into `out` at the
    end, so a write that fails (a full disk) leaves no half a dataset; files of `out` it does not write are kept."""
    out.parent.mkdir(parents=True, exist_ok=True)
    building = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(building, ignore_errors=True)
    try:
        for doc_id, doc in documents.items():
            path = building / "documents" / f"{doc_id}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            _replace(path, doc.text)
        for line in records:
            for reference in line["references"]:
                reference["content"] = documents[reference["doc_id"]].text[reference["start"]:reference["end"]]
        _replace(building / "queries.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        _replace(building / "questions.jsonl", "".join(json.dumps(quoted(r, documents), ensure_ascii=False) + "\n"
                                                       for r in records))
        write_reports(building, records, report)
        _move_into(building, out)
    finally:
        shutil.rmtree(building, ignore_errors=True)


def write_reports(out: Path, records: list[dict[str, Any]], report: QuestionSetAudit) -> None:
    """`generation_report.json` and `.md` alone: what a run that failed writes, to say why, with no dataset."""
    out.mkdir(parents=True, exist_ok=True)
    _replace(out / "generation_report.json", json.dumps(report.to_dict(records), indent=2, ensure_ascii=False) + "\n")
    _replace(out / "generation_report.md", report.markdown(records))


def _move_into(building: Path, out: Path) -> None:
    """`building` renamed to `out`, or, when `out` exists, each of its files moved over the one of `out`."""
    if not out.exists():
        building.rename(out)
        return
    for path in sorted(building.rglob("*")):
        if path.is_file():
            target = out / path.relative_to(building)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)


def quoted(line: dict[str, Any], documents: dict[str, Document]) -> dict[str, Any]:
    """A queries.jsonl line as `dataset=files` reads a question: each reference a quote of its document, with the
    page it starts on (counted from 1) where the document has pages."""
    evidence = []
    for reference in line["references"]:
        pages = getattr(documents[reference["doc_id"]], "pages", (0,))
        page = bisect.bisect_right(pages, reference["start"]) if len(pages) > 1 else None
        evidence.append({"doc": reference["doc_id"], "quote": reference["content"],
                         **({"page": page} if page is not None else {})})
    return {"id": line["id"], "question": line["question"], "answers": line["answers"], "evidence": evidence}


def _replace(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w", encoding="utf-8", newline="") as handle:  # offsets: no newline translation
        handle.write(text)
    temporary.replace(path)
