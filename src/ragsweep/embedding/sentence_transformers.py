"""Any sentence-transformers model, by name or local path, for users who have one."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import cache, cached_property
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ragsweep._memory import release_memory
from ragsweep.cores import torch_threads
from ragsweep.embedding.base import Role, check_batching
from ragsweep.interrupts import uninterrupted

log = logging.getLogger(__name__)


class SentenceTransformerEmbedder:
    """A `SentenceTransformer` on the CPU. Offline, a model name must already be in the local HF cache.

    Args:
        model: Model name or local folder.
        query_prefix: Text put before each question (e.g. "query: " for e5 models).
        passage_prefix: Text put before each chunk (e.g. "passage: ").
        batch_size: Texts per forward pass; 8 is as fast as 16 on 2 CPU cores and peaks ~90 MB lower.
        threads: torch intra-op threads; null shares the cores among the processes embedding at the time.
        progress: Show a progress bar while encoding chunks.
    """

    preload = ("torch", "sentence_transformers")  # libraries its work imports (runner.workers)

    def __init__(self, model: str, query_prefix: str = "", passage_prefix: str = "", batch_size: int = 8,
                 threads: int | None = None, progress: bool = True) -> None:
        check_batching(batch_size, threads)
        if not model:
            raise ValueError("embedder.model must name a sentence-transformers model or a local folder")
        self.model = model
        self.prefixes = {"query": query_prefix, "passage": passage_prefix}
        self.batch_size = batch_size
        self.threads = threads
        self.progress = progress

    def preflight(self) -> None:
        """The model's files are here, checked without loading it: a job served from the stage cache
        never loads the model, and should not wait for it."""
        if not _available_offline(self.model):
            raise OSError(
                f"embedder.model={self.model} cannot be loaded offline (neither a folder nor in the local "
                "Hugging Face cache); pass a local folder holding a sentence-transformers model"
            )

    @cached_property
    def _model(self):
        return _load(self.model)

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        """Embed in slices; with `threads: null`, each slice takes this process's current share of the cores."""
        texts = [self.prefixes[role] + text for text in texts]
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        # longest first, as SentenceTransformer.encode orders one call, so slicing forms the same batches
        order = np.argsort([-len(text) for text in texts], kind="stable")
        model = self._model
        slice_size = self.batch_size * SLICE_BATCHES
        parts = []
        for start in tqdm(range(0, len(texts), slice_size), desc="embedding", unit="slice",
                          disable=not self.progress or role != "passage" or len(texts) <= slice_size):
            batch = [texts[i] for i in order[start : start + slice_size]]
            with torch_threads(self.threads):
                parts.append(model.encode(batch, batch_size=self.batch_size, normalize_embeddings=True,
                                          convert_to_numpy=True, show_progress_bar=False))
        vectors = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        vectors[order] = np.vstack(parts)
        release_memory()
        return vectors


SLICE_BATCHES = 8  # batches between two looks at the core share


def _available_offline(model: str) -> bool:
    """A folder, or a model name whose config is in the local Hugging Face cache."""
    if Path(model).expanduser().is_dir():
        return True
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(model, "config.json"), str)
    except ValueError:  # not a valid repository name either
        return False


@cache
@uninterrupted
def _load(model: str):
    """One loaded model per process: a sweep builds a new embedder for every job."""
    from sentence_transformers import SentenceTransformer

    log.info("loading sentence-transformers model %s", model)
    return SentenceTransformer(model, device="cpu")
