"""An answer with no model: the retrieved sentences closest to the question.

A floor every sweep can afford, and a control for the LLM generators: an LLM that does not beat
the best-matching retrieved sentence adds cost, not answers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from ragsweep.chunking.base import strip_span
from ragsweep.chunking.sentence import sentence_bounds
from ragsweep.embedding.base import Embedder
from ragsweep.generation.base import Generation, Request, check_positive


class ExtractiveGenerator:
    """Answers with the (at most `max_sentences`) sentences of the retrieved passages whose embedding
    is most similar to the question's, most similar first; every word comes from a retrieved chunk.

    Args:
        embedder: The pipeline's embedder (its vectors are cached per text like the chunks').
        max_sentences: Sentences in an answer (>= 1).
    """

    enabled = True

    def __init__(self, embedder: Embedder, max_sentences: int = 1) -> None:
        check_positive(max_sentences, "max_sentences")
        self.embedder = embedder
        self.max_sentences = max_sentences

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return [self._answer(request) for request in requests]

    def _answer(self, request: Request) -> Generation:
        started = time.perf_counter()
        sentences = [passage[start:end] for passage in request.passages
                     for start, end in (strip_span(passage, *bound) for bound in sentence_bounds(passage))
                     if start < end]
        if not sentences:
            return Generation(None, 1000 * (time.perf_counter() - started), error="no retrieved text to answer from")
        vectors = self.embedder.encode(sentences, role="passage")
        question = self.embedder.encode([request.question], role="query")[0]
        order = np.argsort(-(vectors @ question), kind="stable")[: self.max_sentences]
        answer = " ".join(sentences[i] for i in order)
        return Generation(answer, 1000 * (time.perf_counter() - started))
