"""A job's calls to an embedding or rerank endpoint, priced before they are made: its passages and questions
embedded (those the embedding cache lacks are new spending) and each question's candidates reranked.

Reranking is priced without ranking: each question is taken to send its reranker `candidates` chunks of the
chunking's mean tokens. Rerank calls count as new spending in full, as the estimate does not read the rerank cache.
A rewriter's texts are embedded too; the estimate counts each question once (marked ~).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ragsweep.identity import fingerprint
from ragsweep.metrics.costs import Call
from ragsweep.runner.build import Pipeline
from ragsweep.runner.costing import endpoint_model, passages_cost
from ragsweep.runner.estimating.estimates import StageCount
from ragsweep.runner.stages import chunk_dataset
from ragsweep.types import Dataset


@dataclass
class EndpointCalls:
    """Per question its endpoint calls while searched, the cost of embedding every passage, each stage's count
    (`embedding`, `rerank`) and the new spending by key (each text or call made once, however many jobs ask)."""

    searched: list[list[Call]]
    passages: float = 0.0
    stages: dict[str, StageCount] = field(default_factory=dict)
    new: dict[str, tuple[float, int]] = field(default_factory=dict)


def remote_search(pipeline: Pipeline) -> bool:
    """Whether the job's embedder or reranker is an endpoint (whose work the estimate prices without doing)."""
    return any(built is not None and endpoint_model(built.component) is not None
               for built in (pipeline.embedder, pipeline.reranker))


def endpoint_calls(pipeline: Pipeline, dataset: Dataset, questions: Sequence[str]) -> EndpointCalls:
    """The job's endpoint calls, from its chunks alone (chunking is local and cached): nothing is embedded."""
    count = pipeline.evaluator.tokenizer.count
    calls = EndpointCalls([[] for _ in questions])
    if not remote_search(pipeline) or pipeline.chunker is None:
        return calls
    chunks, chunks_key = chunk_dataset(pipeline, dataset)
    texts = [chunk.search_text for chunk in chunks]
    sizes = dict(zip(texts, map(count, texts)))  # counted once: a team's corpus has a million passages
    tokens = sum(sizes[text] for text in texts)
    asked = [count(text) for text in questions]
    embedder = endpoint_model(pipeline.embedder.component) if pipeline.embedder else None
    if embedder is not None:
        cached = pipeline.embedder.component
        absent = getattr(cached, "absent", lambda texts, role: list(dict.fromkeys(texts)))
        new_passages, new_questions = absent(texts, "passage"), set(absent(list(questions), "query"))
        embedded = fingerprint(pipeline.embedder.signature)
        calls.passages = pipeline.prices.of(Call(embedder, True, tokens))
        calls.new[f"passages {embedded} {chunks_key}"] = (passages_cost(pipeline, new_passages, sizes.__getitem__),
                                                          len(new_passages))
        for question, text, size in zip(calls.searched, questions, asked, strict=True):
            question.append(Call(embedder, True, size))
            if text in new_questions:
                calls.new[f"query {embedded} {text}"] = (pipeline.prices.of(question[-1]), 1)
        calls.stages["embedding"] = StageCount(len(texts) + len(questions),
                                               len(texts) + len(questions) - len(new_passages) - len(new_questions),
                                               tokens + sum(asked), rough="query" in pipeline.plan.targets)
    reranker = endpoint_model(pipeline.reranker.component)
    if reranker is not None and texts:
        read = min(pipeline.plan.candidates, len(texts))
        stage = calls.stages["rerank"] = StageCount(len(questions), 0, 0, rough=True)
        for position, (question, text, size) in enumerate(zip(calls.searched, questions, asked, strict=True)):
            question.append(Call(reranker, True, round(read * (size + tokens / len(texts)))))
            stage.prompt_tokens += question[-1].prompt_tokens
            calls.new[f"rerank {fingerprint(pipeline.reranker.signature)} {chunks_key} {position} {text}"] = (
                pipeline.prices.of(question[-1]), 1)
    return calls
