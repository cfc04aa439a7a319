"""The retrieval stage's contract."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol

from ragsweep.contract import PREFLIGHT, PRELOAD, VERSION, OptionalAttribute
from ragsweep.stores.base import ranked
from ragsweep.types import Chunk, Hit


class Retriever(Protocol):
    """Indexes a chunking once, then returns each question's top-k chunks, best first."""

    def index(self, chunks: Sequence[Chunk]) -> None: ...

    def search(self, questions: Sequence[str], k: int) -> list[list[Hit]]: ...


# What the engine reads on a retriever beyond the protocol, when it has it (`ragsweep.contract`).
OPTIONAL = {
    "close": OptionalAttribute("method", "close(): release what `index` built; the runner calls it when the results "
                                         "are in"),
    "search_breadth": OptionalAttribute("method", "search_breadth(k) -> int | None: an approximate search returns the "
                                                  "first k of a candidate list of this length, so its top k is the "
                                                  "first k of a deeper search only when both have the same breadth; "
                                                  "None (or no method): exact"),
    "ranked_lists": OptionalAttribute("method", "ranked_lists() -> {name: Retriever}, with `fuse`: the runner caches "
                                                "each list on its own and fuses them at the requested depth"),
    "fuse": OptionalAttribute("method", "fuse({name: hits}, k) -> hits: the fused top k of each question"),
    "prepare": OptionalAttribute("method", "prepare(chunks): the part of `index` that jobs of other configurations "
                                           "share (a dense retriever embeds the chunks into the per-text cache), "
                                           "called before the runner waits for another job computing the same first "
                                           "stage"),
    "embed_passages": OptionalAttribute("method", "embed_passages(chunks) -> int: embed the chunks into the cache "
                                                  "without keeping them (an embedding helper's work, "
                                                  "runner.embedding_helpers)"),
    "retrieve": OptionalAttribute("method", "retrieve(question, k) -> [(text, score)]: a whole retriever, which "
                                            "chunks and indexes on its own; its texts are located as spans"),
    "min_similarity": OptionalAttribute("number", "with `retrieve`: how alike a returned text must be to the "
                                                  "documents' text to be located by fuzzy search (0-1)"),
    "name": OptionalAttribute("text", "with `retrieve`: its name in the error naming texts it returned that are not "
                                      "in the documents (None: the class of its `component`)"),
    "component": OptionalAttribute("object", "with `retrieve`: the retriever it wraps (`retrieval.own`)"),
    "preflight": PREFLIGHT,
    "preload": PRELOAD,
    "version": VERSION,
}


def reciprocal_rank(rankings: Sequence[Sequence[Hit]], k: int, rrf_k: float = 60,
                    weights: Sequence[float] | None = None) -> list[Hit]:
    """One question's rankings fused (Cormack, Clarke and Buettcher 2009, "Reciprocal Rank Fusion outperforms
    Condorcet and individual Rank Learning Methods"): score(chunk) = sum over rankings i of w_i / (rrf_k + rank_i),
    ranks from 1 over each ranking's top k, w_i = 1 unless given; the top k by that score, ties to the chunk met
    first (`stores.base.ranked`)."""
    scores: dict[int, float] = defaultdict(float)
    for weight, hits in zip(weights if weights is not None else [1.0] * len(rankings), rankings, strict=True):
        for rank, hit in enumerate(hits[:k], start=1):
            scores[hit.index] += weight / (rrf_k + rank)
    return ranked(scores.keys(), scores.values())[:k]
