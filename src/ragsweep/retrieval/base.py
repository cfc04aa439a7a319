"""The retrieval stage's contract."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ragsweep.types import Chunk, Hit


class Retriever(Protocol):
    """Indexes a chunking once, then returns each question's top-k chunks, best first."""

    def index(self, chunks: Sequence[Chunk]) -> None: ...

    def search(self, questions: Sequence[str], k: int) -> list[list[Hit]]: ...

    # Optional: `close()` releases what `index` built; the runner calls it when the results are in.
