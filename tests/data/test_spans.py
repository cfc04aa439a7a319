"""`on_span_mismatch` and `repair_window`, shared by every loader (data/spans.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsweep.data.base import DatasetError
from ragsweep.data.spans import nearest
from ragsweep.data.beir import BeirDataset
from ragsweep.data.chroma_general import ChromaGeneralDataset
from ragsweep.data.native import NativeDataset
from ragsweep.data.sotu_qa import SotuQADataset
from ragsweep.data.squad import SquadDataset
from ragsweep.types import Span

DOC = "The quick brown fox jumps over the lazy dog. The fox sleeps."  # "fox" at 16 and 49


def _native(tmp_path: Path, *references: dict | list[dict]) -> Path:
    """One question per reference (or list of references)."""
    (tmp_path / "documents").mkdir()
    (tmp_path / "documents" / "fox.txt").write_text(DOC)
    lines = [{"id": f"q{i}", "question": "What?", "references": refs if isinstance(refs, list) else [refs]}
             for i, refs in enumerate(references, start=1)]
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(line) for line in lines))
    return tmp_path


def test_native_repair_moves_spans_to_their_text(tmp_path):
    root = _native(tmp_path,
                   {"doc_id": "fox", "start": 5, "end": 20, "content": "quick brown fox"},  # one late
                   {"doc_id": "fox", "start": 44, "end": 47, "content": "fox"},  # 5 early (16 lies outside the window)
                   {"doc_id": "fox", "start": 0, "end": 3, "content": "The"})  # right already
    dataset = NativeDataset(str(root), on_span_mismatch="repair").load()
    assert [q.references for q in dataset.queries] == [
        (Span("fox", 4, 19),), (Span("fox", 49, 52),), (Span("fox", 0, 3),)]
    assert dataset.loading == {"spans_repaired": 2}
    where = f"{root / 'queries.jsonl'}"
    assert [(moved.where, moved.given, moved.moved) for moved in dataset.repairs] == [
        (f"{where}:1 references[0]", Span("fox", 5, 20), Span("fox", 4, 19)),
        (f"{where}:2 references[0]", Span("fox", 44, 47), Span("fox", 49, 52))]
    assert NativeDataset(str(root), on_span_mismatch="repair", limit=1).load().repairs == dataset.repairs


def test_native_error_counts_every_affected_record(tmp_path):
    root = _native(tmp_path,
                   {"doc_id": "fox", "start": 0, "end": 3, "content": "The"},
                   [{"doc_id": "fox", "start": 5, "end": 20, "content": "quick brown fox"},
                    {"doc_id": "fox", "start": 17, "end": 20, "content": "fox"}],  # one record, two bad spans
                   {"doc_id": "fox", "start": 44, "end": 47, "content": "fox"})
    with pytest.raises(DatasetError) as error:
        NativeDataset(str(root)).load()
    assert str(error.value).startswith(f"{root / 'queries.jsonl'}:2 references[0]: content 'quick brown fox' differs")
    assert "2 of 3 records affected (3 spans); fix the offsets or the content, or set dataset.on_span_mismatch=repair" \
        in str(error.value)


def test_repair_leaves_a_text_outside_the_window_failing(tmp_path):
    root = _native(tmp_path, {"doc_id": "fox", "start": 30, "end": 33, "content": "fox"})  # 14 from 16, 19 from 49
    with pytest.raises(DatasetError, match=r"queries.jsonl:1 references\[0\]: content 'fox' differs .* does not start "
                                           r"within 10 characters of 30; 1 of 1 records affected"):
        NativeDataset(str(root), on_span_mismatch="repair").load()
    assert NativeDataset(str(root), on_span_mismatch="repair", repair_window=14).load().loading == {"spans_repaired": 1}


def test_nearest_prefers_the_earlier_of_two_equally_near():
    assert nearest("ab..ab", "ab", 2, 10) == 0  # 0 and 4 are both 2 away
    assert nearest("ab..ab", "ab", 3, 10) == 4
    assert nearest("ab..ab", "ab", 3, 0) is None


def test_sotu_qa_loads_under_repair_with_nothing_moved():
    assert SotuQADataset(on_span_mismatch="repair").load().loading == {"spans_repaired": 0}


LOADERS = {
    "native": lambda **kw: NativeDataset("unused", **kw),
    "chroma_general": lambda **kw: ChromaGeneralDataset("unused", **kw),
    "beir": lambda **kw: BeirDataset("unused", **kw),
    "squad": lambda **kw: SquadDataset("unused", **kw),
    "sotu_qa": lambda **kw: SotuQADataset(**kw),
}


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"on_span_mismatch": "fix"}, r"dataset.on_span_mismatch must be one of error, repair, got 'fix'"),
        ({"repair_window": -1}, r"dataset.repair_window must be a non-negative integer \(characters\), got -1"),
        ({"repair_window": 2.5}, r"dataset.repair_window must be a non-negative integer"),
        ({"repair_window": True}, r"dataset.repair_window must be a non-negative integer"),
    ],
)
def test_every_loader_checks_the_span_settings(loader, setting, message):
    with pytest.raises(ValueError, match=message):
        LOADERS[loader](**setting)
