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
    # Optional: `search_breadth(k) -> int | None`: an approximate search returns the first k of a
    # candidate list of this length, so its top k is the first k of a deeper search only when both
    # have the same breadth; None (or no method) means exact: any deeper list cut to k is the top k.
    # Optional, for fusion: `ranked_lists() -> {name: Retriever}` and `fuse({name: hits}, k)`; the
    # runner then caches each list on its own and fuses at the requested depth.
    # Optional: `prepare(chunks)` does the part of `index` that jobs of other configurations share (a dense
    # retriever embeds the chunks into the per-text cache); the runner calls it before it waits for another
    # job computing the same first stage, so that job's embedding is shared out instead of waited for.
