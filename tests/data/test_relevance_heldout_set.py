"""The held-out relevance questions (benchmarks/data/relevance_heldout.jsonl): every reference is a passage of
its corpus that no chroma_general question's reference overlaps, so a fold model trained on chroma_general
never saw it, and the benchmark's joined dataset loads with each span where the file puts it."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from ragsweep.data.chroma_general import ChromaGeneralDataset
from ragsweep.data.native import NativeDataset
from ragsweep.types import Span

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "benchmarks" / "data" / "relevance_heldout.jsonl"
CHROMA_GENERAL = ROOT.parent / "shared" / "data" / "chroma_general"
# As shipped; the table of benchmarks/data/README.md. A change here must change that README too.
CORPUS_COUNTS = {"finance": 35, "pubmed": 35, "wikitexts": 35, "state_of_the_union": 15, "chatlogs": 15}

pytestmark = pytest.mark.skipif(not CHROMA_GENERAL.is_dir(),
                                reason="../shared/data/chroma_general is not beside the checkout")


def _records() -> list[dict]:
    return [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_reference_is_a_passage_no_chroma_general_question_uses():
    chroma = ChromaGeneralDataset(str(CHROMA_GENERAL)).load()
    used = [span for query in chroma.queries for span in query.references]
    records = _records()
    assert len({record["id"] for record in records}) == len(records)
    assert Counter(record["corpus"] for record in records) == CORPUS_COUNTS
    taken = []
    for record in records:
        assert set(record) == {"id", "question", "corpus", "references"}, record["id"]
        assert record["question"].strip().endswith("?"), record["id"]
        for reference in record["references"]:
            start, end = reference["start"], reference["end"]
            assert reference["doc_id"] == record["corpus"], record["id"]
            assert 40 <= end - start <= 700, record["id"]
            assert end <= len(chroma.documents[record["corpus"]].text), record["id"]
            assert not any(span.doc_id == reference["doc_id"] and span.start < end and start < span.end
                           for span in used + taken), record["id"]
            taken.append(Span(reference["doc_id"], start, end))


def test_the_benchmarks_dataset_joins_both_question_sets_with_their_spans(tmp_path):
    script = ROOT / "benchmarks" / "relevance_heldout.py"
    spec = importlib.util.spec_from_file_location("relevance_heldout", script)
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    new = benchmark.write_dataset(CHROMA_GENERAL.parent, tmp_path)
    joined = NativeDataset(str(tmp_path)).load()
    chroma = ChromaGeneralDataset(str(CHROMA_GENERAL)).load()
    assert new == {record["id"]: record["corpus"] for record in _records()}
    assert len(joined.queries) == len(chroma.queries) + len(new)
    assert {doc.id: doc.text for doc in joined.documents.values()} == \
        {doc.id: doc.text for doc in chroma.documents.values()}
    by_id = {query.id: query for query in joined.queries}
    assert all(by_id[query.id].references == query.references for query in chroma.queries)
    for record in _records():
        found = [(span.doc_id, span.start, span.end) for span in by_id[record["id"]].references]
        assert found == [(ref["doc_id"], ref["start"], ref["end"]) for ref in record["references"]]
