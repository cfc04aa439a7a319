"""A judged answer's claims as the feedback people label on its MLflow trace, and a question's trace rebuilt
from its line of per_query.jsonl (for a question the run did not trace, when `ragsweep labels sample` draws
one of its claims). Pure functions: `tracking.traces` logs what they return.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragsweep.metrics.judged import best_passage

FEEDBACK_PREFIX = "support/"  # claim i of an answer is the feedback support/<i>


def claim_feedback(query_id: str, claims: Sequence[str], support: Sequence[Sequence[float | None]],
                   passages: Sequence[str], threshold: float) -> list[dict]:
    """Claim i of an answer as the feedback `support/<i>`: its best support score over the passages, the
    passage that gave it as the rationale, and the claim itself in the metadata (what a person labels). A
    claim whose every call failed (scores None) has no score, so no feedback; its failures are in
    failed_calls.jsonl."""
    feedback = []
    for number, (claim, row) in enumerate(zip(claims, support, strict=True)):
        best = best_passage(row)
        if best is None:
            continue
        score, rank = best
        feedback.append({"name": f"{FEEDBACK_PREFIX}{number}", "value": float(score),
                         "rationale": passages[rank - 1],
                         "metadata": {"query_id": query_id, "claim": claim, "passage_rank": rank,
                                      "supported": score >= threshold, "threshold": threshold}})
    return feedback


def trace_record(record: Mapping[str, Any], judge: str, threshold: float) -> dict:
    """The trace record (`tracking.traces.log_traces`) of one question, from its per_query.jsonl line: the
    retrieved passages, the answer and the judge's feedback on its claims, as the runner traces a question.

    per_query.jsonl keeps the final k passages and the answer's generation time, not the first stage's
    hits nor a question's search time, so the trace has one retrieval span of those passages, timed 0 ms.
    """
    judged = record["judged"]
    passages = list(judged["passages"])
    claims = judged["claims"]
    retrieved = [{**hit, "text": text} for hit, text in zip(record["retrieved"], passages, strict=False)]
    generation = record.get("generation") or {}
    spans = [{"name": "retrieval", "span_type": "RETRIEVER", "inputs": {"question": record["question"]},
              "outputs": retrieved, "ms": 0.0},
             {"name": "generation", "span_type": "LLM", "inputs": {"question": record["question"]},
              "outputs": {"answer": record.get("answer"), "prompt_tokens": generation.get("prompt_tokens"),
                          "completion_tokens": generation.get("completion_tokens")},
              "ms": float(generation.get("latency_ms") or 0.0)}]
    return {"id": record["id"], "question": record["question"], "answer": record.get("answer"),
            "error": generation.get("error"), "spans": spans, "judge": judge,
            "feedback": claim_feedback(str(record["id"]), [claim["text"] for claim in claims],
                                       [claim["support"] for claim in claims], passages, threshold)}
