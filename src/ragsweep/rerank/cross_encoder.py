"""Second-stage scoring of (question, chunk) pairs with a sentence-transformers CrossEncoder."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, cached_property

from ragsweep.cores import torch_threads
from ragsweep.interrupts import uninterrupted
from ragsweep.stores.base import ranked
from ragsweep.types import Chunk, Hit


class CrossEncoderReranker:
    """Re-scores the first `candidates` hits of each question with a cross-encoder, best first.

    No cross-encoder ships offline, so `model` must be a local folder (e.g. a downloaded
    cross-encoder/ms-marco-MiniLM-L-6-v2) or a name already in the Hugging Face cache; the job
    fails before any work when it cannot be loaded.

    Args:
        model: Model folder or name.
        candidates: First-stage hits re-scored per question (>= k).
        batch_size: Pairs per forward pass.
        threads: torch threads; null shares the cores among the processes running models at the time.
    """

    preload = ("torch", "sentence_transformers")  # libraries its work imports (runner.workers)

    def __init__(self, model: str, candidates: int = 20, batch_size: int = 16, threads: int | None = None) -> None:
        if candidates <= 0 or batch_size <= 0:
            raise ValueError(f"reranker.candidates and reranker.batch_size must be > 0, got {candidates}, {batch_size}")
        self.model = model
        self.candidates = candidates
        self.batch_size = batch_size
        self.threads = threads

    def preflight(self) -> None:
        try:
            self._model
        except Exception as error:  # any failure to load means the same thing to the user
            raise OSError(
                f"reranker.model={self.model} cannot be loaded ({type(error).__name__}: {str(error).splitlines()[0][:120]}); "
                "cross-encoders are not packaged for offline use: pass a local folder holding one"
            ) from error

    @cached_property
    def _model(self):
        return _load(self.model)

    def rerank(self, questions: Sequence[str], chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]]) -> list[list[Hit]]:
        pairs = [(question, chunks[hit.index].search_text) for question, query_hits in zip(questions, hits)
                 for hit in query_hits]
        with torch_threads(self.threads):
            scores = iter(self._model.predict(pairs, batch_size=self.batch_size,
                                              show_progress_bar=len(pairs) > 256).tolist())
        return [ranked([hit.index for hit in query_hits], [next(scores) for _ in query_hits]) for query_hits in hits]


@cache
@uninterrupted
def _load(model: str):
    """One loaded model per process: a sweep's check and its jobs build a reranker each."""
    from sentence_transformers import CrossEncoder

    return CrossEncoder(model, device="cpu")
