"""The generation stage of a job: each question's answer from its top-k passages, cached per prompt."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from ragsweep.identity import fingerprint
from ragsweep.generation.base import Generation, Request
from ragsweep.runner.build import Pipeline
from ragsweep.types import Chunk, Hit

log = logging.getLogger(__name__)


def generate(pipeline: Pipeline, questions: Sequence[str], chunks: Sequence[Chunk],
             hits: Sequence[Sequence[Hit]]) -> list[Generation] | None:
    """Each question's answer from its top-k passages (None without a generator).

    An answer is cached under the generator's settings and the rendered prompt (the question and the
    exact passages, in order), so configurations that hand the generator the same passages share it,
    and a repeated sweep generates nothing. Failed calls are returned, not cached: a rerun retries them.
    """
    if pipeline.generator is None:
        return None
    generator = pipeline.generator
    requests, keys = answer_requests(pipeline, questions, chunks, hits)

    def compute(positions: list[int]) -> list[dict[str, np.ndarray]]:
        return [_pack_generation(made) for made in generator.component.generate([requests[i] for i in positions])]

    before = pipeline.cache.misses["answers"]
    entries = pipeline.cache.get_or_compute_each("answers", keys, compute, storable=lambda a: not str(a["error"]))
    made = pipeline.cache.misses["answers"] - before
    log.info("answers: %d generated, %d from the cache", made, len(set(keys)) - made)
    return [unpack_generation(entry) for entry in entries]


def answer_requests(pipeline: Pipeline, questions: Sequence[str], chunks: Sequence[Chunk],
                    hits: Sequence[Sequence[Hit]]) -> tuple[list[Request], list[str]]:
    """Each question's request to the generator (its top-k passages rendered into the prompt) and the key its
    answer is cached under."""
    requests = []
    for question, query_hits in zip(questions, hits, strict=True):
        passages = tuple(chunks[hit.index].text for hit in query_hits[: pipeline.plan.k])
        requests.append(Request(question, passages, pipeline.prompt.render(question, passages)))
    return requests, [fingerprint("answer", pipeline.generator.signature, request.messages) for request in requests]


def _pack_generation(made: Generation) -> dict[str, np.ndarray]:
    return {"answer": np.array(made.answer or ""), "latency_ms": np.array(made.latency_ms),
            "prompt_tokens": np.array(made.prompt_tokens), "completion_tokens": np.array(made.completion_tokens),
            "error": np.array(made.error or "")}


def unpack_generation(entry: dict[str, np.ndarray]) -> Generation:
    error = str(entry["error"]) or None
    return Generation(None if error else str(entry["answer"]), float(entry["latency_ms"]),
                      int(entry["prompt_tokens"]), int(entry["completion_tokens"]), error)
