"""A 64-dimensional model2vec static embedding (from the `tokenlearn-static-model` package): fast, weaker."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

from ragsweep.embedding.base import Role, check_batching, encode_in_batches


class StaticEmbedder:
    """Averages learned token vectors: no transformer, so thousands of texts per second.

    Args:
        batch_size: Texts per call (also the progress-bar step).
        progress: Show a progress bar while encoding chunks.
    """

    preload = ("model2vec", "static_model")  # libraries its work imports (runner.workers)

    def __init__(self, batch_size: int = 1024, progress: bool = True) -> None:
        check_batching(batch_size, None)
        self.batch_size = batch_size
        self.progress = progress

    @cached_property
    def _model(self):
        import static_model
        from model2vec import StaticModel

        return StaticModel.from_pretrained(str(Path(static_model.__file__).parent / "model"))

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        return encode_in_batches(texts, self.batch_size, self._model.encode, self.progress and role == "passage",
                                 "embedding (static)")
