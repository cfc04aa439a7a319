"""What every option of conf/cutoff/, conf/augment/ and conf/compress/ must keep, on real documents and chunks: a
cut-off keeps a question's hits in their order and drops none of its first `min_hits`; an augmenter's passages are
spans of their documents, hold every chunk passed on, and never overlap or touch one another; a compressor's are
spans within the passages it was given, in their order. The options come from the folders, so a new YAML is held
to this without editing the file."""

from __future__ import annotations

import numpy as np
import pytest

from ragsweep.augment.base import Passage
from ragsweep.data.sotu_qa import SotuQADataset
from ragsweep.types import Chunk, Hit
from tests.conf_options import compose_option, instantiate_group, options

REQUIRED = {("cutoff", "threshold"): ["cutoff.min_score=0.5"]}


def _build(group: str, option: str, **stages):
    return instantiate_group(compose_option(group, option, *REQUIRED.get((group, option), [])), group, **stages)


@pytest.fixture(scope="module")
def corpus() -> tuple[dict, list[Chunk], list[list[Hit]]]:
    """sotu_qa's documents, their recursive chunks, and 40 questions' random top 10 over them, best first."""
    documents = SotuQADataset().load().documents
    chunker = _build("chunker", "recursive")
    chunks = [chunk for doc_id in sorted(documents) for chunk in chunker.split(documents[doc_id])]
    rng = np.random.default_rng(0)
    hits = [[Hit(int(index), float(score)) for index, score in zip(rng.choice(len(chunks), 10, replace=False),
                                                                   np.sort(rng.random(10))[::-1], strict=True)]
            for _ in range(40)]
    return documents, chunks, hits


@pytest.mark.parametrize("option", options("cutoff"))
def test_a_cutoff_keeps_hits_in_their_order(option, corpus):
    _, _, hits = corpus
    cutoff = _build("cutoff", option)
    cut = cutoff.cut(hits)
    assert len(cut) == len(hits)
    for kept, given in zip(cut, hits, strict=True):
        positions = [given.index(hit) for hit in kept]
        assert positions == sorted(positions)
        assert given[: min(getattr(cutoff, "min_hits", 0), len(given))] == kept[: getattr(cutoff, "min_hits", 0)]


@pytest.mark.parametrize("option", options("augment"))
def test_an_augmenters_passages_are_spans_holding_their_chunks_apart_from_one_another(option, corpus):
    documents, chunks, hits = corpus
    widened = _build("augment", option).augment(hits, chunks, documents)
    assert len(widened) == len(hits) and any(
        len(row) < len(query_hits) for row, query_hits in zip(widened, hits, strict=True)) == (option != "none")
    for row, query_hits in zip(widened, hits, strict=True):
        spans = [passage.span for passage in row]
        assert all(0 <= span.start < span.end <= documents[span.doc_id].length for span in spans)
        for hit in query_hits:
            chunk = chunks[hit.index]
            assert any(span.doc_id == chunk.doc_id and span.start <= chunk.start and chunk.end <= span.end
                       for span in spans), f"augment={option} lost {chunk.span}"
        if option != "none":
            assert all(a.doc_id != b.doc_id or a.end < b.start or b.end < a.start
                       for i, a in enumerate(spans) for b in spans[i + 1:])


@pytest.mark.parametrize("option", options("compress"))
def test_a_compressors_passages_lie_within_those_it_was_given_in_their_order(option, corpus):
    documents, chunks, hits = corpus
    embedder = _build("embedder", "static", progress=False) if option != "none" else None
    questions = [f"question {position} about the union and its people" for position in range(len(hits))]
    given = [[Passage(chunks[hit.index].span, hit.score) for hit in query_hits] for query_hits in hits]
    compressed = _build("compress", option, embedder=embedder).compress(questions, given, documents)
    assert len(compressed) == len(given)
    for row, passages in zip(compressed, given, strict=True):
        assert row, f"compress={option} passed nothing on"
        within = [next(rank for rank, passage in enumerate(passages) if passage.span.doc_id == kept.span.doc_id
                       and passage.span.start <= kept.span.start and kept.span.end <= passage.span.end)
                  for kept in row]
        assert within == sorted(within)
        assert all(kept.score == passages[rank].score for kept, rank in zip(row, within, strict=True))
