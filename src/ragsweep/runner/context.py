"""What a job passes on to its generator, judges and metrics: each question's top k hits, cut by its cut-off,
widened by its augmenter and compressed by its compressor."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragsweep.augment.none import NoAugmenter
from ragsweep.runner.build import Pipeline
from ragsweep.types import Chunk, Document, Hit, Span


@dataclass(frozen=True)
class Context:
    """`kept`: each question's top-k hits the cut-off kept, best first (what the chunk and ranking metrics score and
    per_query.jsonl's `retrieved` lists). `chunks` and `hits`: the passages passed on, as hits into `chunks` (the
    chunking's, or the passages' an augmenter or a compressor made), best first. `widened`: whether one made them."""

    kept: list[list[Hit]]
    chunks: Sequence[Chunk]
    hits: list[list[Hit]]
    widened: bool = False

    def spans(self) -> list[list[Span]] | None:
        """Each question's passages as spans, when widened (None: they are the kept chunks)."""
        if not self.widened:
            return None
        return [[self.chunks[hit.index].span for hit in query_hits] for query_hits in self.hits]


def passed_on(pipeline: Pipeline, questions: Sequence[str], chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]],
              documents: Mapping[str, Document]) -> Context:
    """Each question's first k `hits` (the final ranking), cut, widened and compressed as the job's plan says. A
    cut-off and an augmenter work on the k hits of each question alone, in microseconds, so their results are not
    cached; a compressor's expensive part, embedding sentences, is cached per text like every embedding."""
    top = [list(query_hits[: pipeline.plan.k]) for query_hits in hits]
    kept = pipeline.cutoff.component.cut(top) if pipeline.cutoff is not None else top
    if pipeline.augmenter is None and pipeline.compressor is None:
        return Context(kept, chunks, kept)
    augmenter = pipeline.augmenter.component if pipeline.augmenter is not None else NoAugmenter()
    widened = augmenter.augment(kept, chunks, documents)
    if pipeline.compressor is not None:
        widened = pipeline.compressor.component.compress(questions, widened, documents)
    passages, passed = [], []
    for row in widened:
        passed.append([Hit(len(passages) + position, passage.score) for position, passage in enumerate(row)])
        passages += [Chunk.of(documents[passage.span.doc_id], passage.span.start, passage.span.end)
                     for passage in row]
    return Context(kept, passages, passed, widened=True)
