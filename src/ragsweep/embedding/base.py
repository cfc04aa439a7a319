"""The embedding stage's contract, and the batching every embedder shares."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

import numpy as np
from tqdm.auto import tqdm

from ragsweep._memory import release_memory
from ragsweep.contract import MODEL_NAME, PREFLIGHT, PRELOAD, REMOTE, VERSION, OptionalAttribute

Role = Literal["query", "passage"]


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors; `role` lets models that prefix queries do so."""

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray: ...


# What the engine reads on a embedder beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {
    "absent": OptionalAttribute("method", "absent(texts, role) -> list[str]: the texts it would embed anew (the "
                                          "cache's wrapper, `embedding.cached`), which an estimate prices"),
    "fill": OptionalAttribute("method", "fill(texts, role) -> int: embed into the cache without returning vectors "
                                        "(the cache's wrapper, `embedding.cached`)"),
    "model_name": MODEL_NAME,
    "remote": REMOTE,
    "preflight": PREFLIGHT,
    "preload": PRELOAD,
    "version": VERSION,
}


def check_batching(batch_size: int, threads: int | None) -> None:
    if batch_size <= 0:
        raise ValueError(f"embedder.batch_size must be > 0, got {batch_size}")
    if threads is not None and threads <= 0:
        raise ValueError(f"embedder.threads must be > 0 or null, got {threads}")


def encode_in_batches(
    texts: Sequence[str], batch_size: int, encode_batch: Callable[[list[str]], np.ndarray], progress: bool, desc: str
) -> np.ndarray:
    """Run `encode_batch` over slices of `texts` with a progress bar; return unit-length float32 rows."""
    parts = [
        np.asarray(encode_batch(list(texts[i : i + batch_size])), dtype=np.float32)
        for i in tqdm(range(0, len(texts), batch_size), desc=desc, unit="batch",
                      disable=not progress or len(texts) <= batch_size)
    ]
    release_memory()
    if not parts:
        return np.empty((0, 0), dtype=np.float32)
    return unit_length(np.vstack(parts))


def unit_length(vectors: np.ndarray) -> np.ndarray:
    """Each row divided by its L2 norm (a zero row left as it is), so a dot product is a cosine."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)
