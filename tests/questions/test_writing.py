"""A generated question set is written whole or not at all: a write that fails leaves no half a dataset."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from ragsweep.questions import writing
from ragsweep.types import Document

DOCUMENTS = {"mill": Document("mill", "Ann Hale built the water mill at Cray in 1820.")}
RECORD = {"id": "q0001", "question": "Who built the mill?", "answers": ["Ann Hale"],
          "references": [{"doc_id": "mill", "start": 0, "end": 8, "content": None}]}


class Report:
    """What write_dataset reads of a QuestionSetAudit."""

    def to_dict(self, records: list) -> dict:
        return {"questions_kept": len(records)}

    def markdown(self, records: list) -> str:
        return f"kept {len(records)}\n"


def _written(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def test_a_set_is_written_whole_into_a_new_folder(tmp_path):
    out = tmp_path / "data" / "set"
    writing.write_dataset(out, DOCUMENTS, [dict(RECORD)], Report())
    assert _written(out) == ["documents", "documents/mill.txt", "generation_report.json", "generation_report.md",
                             "queries.jsonl", "questions.jsonl"]
    assert json.loads((out / "queries.jsonl").read_text())["references"][0]["content"] == "Ann Hale"
    assert [path.name for path in out.parent.iterdir()] == ["set"]  # no temporary sibling left


def test_a_write_that_fails_leaves_nothing_of_the_set(tmp_path, monkeypatch):
    """The disk fills while queries.jsonl is written: no folder, no documents, no temporary sibling."""
    real = writing._replace

    def full(path: Path, text: str) -> None:
        if path.name == "queries.jsonl":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, text)

    monkeypatch.setattr(writing, "_replace", full)
    with pytest.raises(OSError):
        writing.write_dataset(tmp_path / "set", DOCUMENTS, [dict(RECORD)], Report())
    assert _written(tmp_path) == []


def test_a_set_written_over_an_earlier_one_keeps_the_files_it_does_not_write(tmp_path):
    out = tmp_path / "set"
    (out / "documents").mkdir(parents=True)
    (out / "documents" / "other.txt").write_text("kept")
    (out / "queries.jsonl").write_text("old\n")
    writing.write_dataset(out, DOCUMENTS, [dict(RECORD)], Report())
    assert (out / "documents" / "other.txt").read_text() == "kept"
    assert (out / "queries.jsonl").read_text().startswith('{"id": "q0001"')
    assert [path.name for path in tmp_path.iterdir()] == ["set"]


def test_a_run_that_kept_nothing_writes_its_reports_alone(tmp_path):
    writing.write_reports(tmp_path / "set", [], Report())
    assert _written(tmp_path / "set") == ["generation_report.json", "generation_report.md"]
