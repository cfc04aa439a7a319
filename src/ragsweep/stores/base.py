"""The vector-store stage's contract."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ragsweep.types import Hit


class VectorStore(Protocol):
    """Holds passage vectors and returns, per query vector, the k nearest as hits (best first)."""

    def add(self, vectors: np.ndarray) -> None: ...

    def search(self, queries: np.ndarray, k: int) -> list[list[Hit]]: ...
