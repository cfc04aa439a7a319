"""An embedder ragsweep does not ship: anything with `encode(texts)`, or LangChain's `Embeddings`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragsweep.embedding.base import Role


class OwnEmbedder:
    """Wraps `component`: `encode(texts)` (sentence-transformers style), or LangChain's `embed_documents(texts)`
    for passages and `embed_query(text)` for questions. Vectors are scaled to unit length, as every
    store here expects. Cached per text like ragsweep's embedders, under `name` and `version` (see OwnChunker).
    """

    def __init__(self, component: Any = None, name: str | None = None, version: str | None = None) -> None:
        if component is None:
            raise ValueError("embedder: OwnEmbedder wraps a model: pass it to ragsweep.Evaluation().run(embedder=...), "
                             "or give embedder.component a _target_ in your own YAML (--config-dir)")
        if not hasattr(component, "encode") and not hasattr(component, "embed_documents"):
            raise ValueError(f"embedder: {type(component).__name__} has neither encode(texts) nor "
                             "embed_documents(texts)/embed_query(text)")
        self.component, self.name, self.version = component, name, version

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        if hasattr(self.component, "embed_documents"):
            if role == "query" and hasattr(self.component, "embed_query"):
                rows = [self.component.embed_query(text) for text in texts]
            else:
                rows = self.component.embed_documents(texts)
        else:
            rows = self.component.encode(texts)
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)
