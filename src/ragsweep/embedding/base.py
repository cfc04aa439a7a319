"""The embedding stage's contract."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np

Role = Literal["query", "passage"]


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors; `role` lets models that prefix queries do so."""

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray: ...
