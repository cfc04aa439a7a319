"""A user's own retriever, as a user's package would define it, for naming it in YAML (`--config-dir`).

LangChain's real BM25Retriever over LangChain's splits of the embedded dataset's documents; and ragsweep's BM25
as a new version of its code would declare itself.
"""

from __future__ import annotations

import os

from ragsweep.retrieval.bm25 import BM25Retriever as RagsweepBM25


class VersionedBM25(RagsweepBM25):
    """ragsweep's BM25, computing the same numbers, as the version of its code `TEST_BM25_VERSION` says (none when
    unset): the same class before and after a change that raised its version."""

    version = os.environ.get("TEST_BM25_VERSION")


def sotu_bm25(chunk_size: int, k: int):
    from langchain_community.retrievers import BM25Retriever
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from ragsweep.data.sotu_qa import SotuQADataset

    documents = SotuQADataset().load().documents
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=0)
    texts = [piece for doc_id in sorted(documents) for piece in splitter.split_text(documents[doc_id].text)]
    return BM25Retriever.from_texts(texts, k=k)
