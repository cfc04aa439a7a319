"""Questions as MLflow traces, and the dataset as a run input: what MLflow 3's UI shows in a run's
Traces tab and in the runs table's Dataset column.

A trace is rebuilt from the durations the runner recorded (results may come from the cache, so
nothing is timed here): the question is the root span, its stages are child spans laid end to end.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

DIGEST_CHARS = 36  # MLflow's limit on a dataset digest (MAX_DATASET_DIGEST_SIZE)
DOCUMENT_SPANS = ("RETRIEVER", "RERANKER")  # spans whose outputs the UI renders as documents
TOKEN_USAGE = "mlflow.chat.tokenUsage"  # span attribute the UI shows and sums per trace
QUERY_TAG = "ragsweep.query_id"
INCLUSION_TAG = "ragsweep.inclusion."  # + support/<i>: `labels sample` drew that claim with this probability


def log_dataset(run_id: str, name: str, fingerprint: str, source: str, queries: int) -> None:
    """Log the dataset's name and fingerprint as the run's input, with context `evaluation`.

    Only metadata is logged, never the data. The digest is the fingerprint's first 36 hex
    characters (MLflow's limit); the profile keeps the whole fingerprint and the question count.
    Parallel jobs starting together both insert the experiment's dataset row, and the store refuses
    the second (a unique constraint, in SQLite and PostgreSQL alike); that job's second try links
    the row the first one made.
    """
    import mlflow
    from mlflow.entities import Dataset, DatasetInput, InputTag
    from mlflow.exceptions import MlflowException

    dataset = Dataset(name=name, digest=fingerprint[:DIGEST_CHARS], source_type="local",
                      source=json.dumps({"uri": source}),
                      profile=json.dumps({"queries": queries, "fingerprint": fingerprint}))
    context = InputTag(key="mlflow.data.context", value="evaluation")
    inputs = [DatasetInput(dataset, tags=[context])]
    try:
        mlflow.MlflowClient().log_inputs(run_id, datasets=inputs)
    except MlflowException as error:
        if not any(word in str(error) for word in ("UNIQUE constraint", "duplicate key", "IntegrityError")):
            raise
        mlflow.MlflowClient().log_inputs(run_id, datasets=inputs)


def log_traces(traces: Sequence[Mapping[str, Any]], run_id: str, experiment_id: str) -> list[str]:
    """One MLflow trace per record, linked to `run_id` (metadata `mlflow.sourceRun`); their trace ids.

    MLflow writes them in the background: call `mlflow.flush_trace_async_logging()` before the run ends,
    and before `log_claim_feedback` on them.
    """
    return [_log_trace(record, run_id, experiment_id, start_ns=time.time_ns()) for record in traces]


def log_claim_feedback(trace_id: str, record: Mapping[str, Any]) -> int:
    """The judge's verdict on each claim of a traced answer as an MLflow feedback on its trace, which the
    UI shows beside the answer and where a person overrides it (`ragsweep labels pull` reads those).

    `record["feedback"]` holds `{"name": "support/<i>", "value", "rationale", "metadata"}` per claim and
    `record["judge"]` the judge's name and version; the feedback's source is that LLM judge. How many logged.
    """
    import mlflow
    from mlflow.entities import AssessmentSource, AssessmentSourceType

    source = AssessmentSource(source_type=AssessmentSourceType.LLM_JUDGE, source_id=str(record["judge"]))
    for feedback in record["feedback"]:
        mlflow.log_feedback(trace_id=trace_id, name=feedback["name"], value=feedback["value"], source=source,
                            rationale=feedback["rationale"],
                            metadata={key: str(value) for key, value in feedback["metadata"].items()})
    return len(record["feedback"])


def _log_trace(record: Mapping[str, Any], run_id: str, experiment_id: str, start_ns: int) -> str:
    import mlflow
    from mlflow.entities import SpanStatus, SpanStatusCode

    durations = [_ns(stage.get("ms")) for stage in record.get("spans", ())]  # checked before any span opens
    root = mlflow.start_span_no_context(
        str(record["id"]), span_type="CHAIN", inputs={"question": record["question"]},
        experiment_id=experiment_id, start_time_ns=start_ns, tags={QUERY_TAG: str(record["id"])},
        metadata={"mlflow.sourceRun": run_id})
    end_ns = start_ns
    for stage, duration in zip(record.get("spans", ()), durations, strict=True):
        span = mlflow.start_span_no_context(stage["name"], span_type=stage.get("span_type", "UNKNOWN"),
                                            parent_span=root, inputs=stage.get("inputs"), start_time_ns=end_ns)
        outputs = stage.get("outputs")
        usage = _token_usage(outputs) if stage.get("span_type") == "LLM" else None
        if usage:
            span.set_attribute(TOKEN_USAGE, usage)
        if stage.get("span_type") in DOCUMENT_SPANS:
            outputs = documents(outputs)
        end_ns += duration
        span.end(outputs=outputs, end_time_ns=end_ns)
    error = record.get("error")
    status = SpanStatus(SpanStatusCode.ERROR, str(error)) if error else SpanStatus(SpanStatusCode.OK)
    root.end(outputs={"answer": record.get("answer")}, status=status, end_time_ns=end_ns)
    return root.trace_id


def documents(hits: Any) -> Any:
    """Ranked hits as MLflow's retriever documents (`page_content`, `metadata`, `id`), which the
    Traces tab renders as passages. A hit is `{"text", "doc_id", "start", "end", ...}`; anything
    else (a dict, hits already in document shape) is returned unchanged."""
    if not isinstance(hits, list):
        return hits
    shaped = []
    for hit in hits:
        if not isinstance(hit, Mapping) or "text" not in hit or "page_content" in hit:
            shaped.append(hit)
            continue
        metadata = {key: value for key, value in hit.items() if key != "text"}
        span_id = f"{hit.get('doc_id')}:{hit.get('start')}-{hit.get('end')}"
        shaped.append({"page_content": hit["text"], "metadata": {"doc_uri": span_id, **metadata}, "id": span_id})
    return shaped


def _token_usage(outputs: Any) -> dict[str, int] | None:
    if not isinstance(outputs, Mapping):
        return None
    prompt, completion = outputs.get("prompt_tokens"), outputs.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    return {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion}


def _ns(ms: float | None) -> int:
    if not isinstance(ms, (int, float)) or ms < 0:
        raise ValueError(f"a span's duration must be >= 0 ms, got {ms!r}")
    return round(ms * 1_000_000)
