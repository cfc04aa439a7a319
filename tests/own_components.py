"""A user's own retriever, as a user's package would define it, for naming it in YAML (`--config-dir`).

LangChain's real BM25Retriever over LangChain's splits of the embedded dataset's documents.
"""

from __future__ import annotations


def sotu_bm25(chunk_size: int, k: int):
    from langchain_community.retrievers import BM25Retriever
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from ragsweep.data.sotu_qa import SotuQADataset

    documents = SotuQADataset().load().documents
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=0)
    texts = [piece for doc_id in sorted(documents) for piece in splitter.split_text(documents[doc_id].text)]
    return BM25Retriever.from_texts(texts, k=k)
