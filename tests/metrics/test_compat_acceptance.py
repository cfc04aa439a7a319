"""chroma_compat reproduces the precision-Ω that Chroma published for the general benchmark.

Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval" (Chroma, 2024), Table 1:
RecursiveCharacterTextSplitter 200 tokens / overlap 0: precision-Ω 29.9 ± 18.4;
TokenTextSplitter 800 / 400: 4.7 ± 3.1 (mean ± population std over 472 questions, in %).
"""

from __future__ import annotations

import pytest

from ragsweep.chunking.fixed import FixedTokenChunker
from ragsweep.chunking.recursive import RecursiveChunker
from ragsweep.metrics.aggregate import summarize
from ragsweep.metrics.evaluate import SpanEvaluator


@pytest.mark.parametrize(
    ("chunker", "published"),
    [(RecursiveChunker(size=200, overlap=0), (29.9, 18.4)), (FixedTokenChunker(size=800, overlap=400), (4.7, 3.1))],
    ids=["recursive-200-0", "fixed-800-400"],
)
def test_precision_omega_matches_the_chroma_report(chroma_general, chunker, published):
    chunks = [chunk for doc_id in sorted(chroma_general.documents) for chunk in chunker.split(chroma_general.documents[doc_id])]
    no_hits = [[] for _ in chroma_general.queries]  # precision-Ω needs no retrieval
    per_query = SpanEvaluator(unit="chars", mode="chroma_compat").score(chroma_general, chunks, no_hits, k=5)
    omega = summarize(per_query, [q.corpus for q in chroma_general.queries], bootstrap_samples=10)["precision_omega"]
    assert (round(omega["mean"] * 100, 1), round(omega["std"] * 100, 1)) == published
