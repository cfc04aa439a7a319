"""Where a draw of claims for people to label lives in MLflow (`ragsweep labels sample`).

The population comes from the judged runs' per_query.jsonl artifacts. Each drawn claim gets a trace of its
question linked to its run, with the judge's `support/<i>` feedback on it: the run's own trace when it traced
the question, else one rebuilt from per_query.jsonl (`judging.calibration.feedback.trace_record`). The claim is marked
drawn by the trace tag `ragsweep.inclusion.support/<i>` holding its inclusion probability, which `ragsweep
labels pull` reads from any machine. A draw replaces the previous one's marks, and reuses the traces it made,
so sampling again with the same seed changes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragsweep.judging.calibration.feedback import trace_record
from ragsweep.judging.calibration.draw import Draw
from ragsweep.tracking.feedback_labels import experiment_traces
from ragsweep.tracking.judged_runs import JudgedRun
from ragsweep.tracking.mlflow_tracker import MlflowTracker
from ragsweep.tracking.traces import INCLUSION_TAG, QUERY_TAG, log_claim_feedback, log_traces

SOURCE_RUN = "mlflow.sourceRun"  # trace metadata: the run a trace belongs to
REBUILT_TAG = "ragsweep.rebuilt_from"  # on a trace `labels sample` made: what it was rebuilt from


@dataclass(frozen=True)
class PlacedDraw:
    """What placing a draw did: traces made, traces of the runs reused, judge feedback added to them."""

    new_traces: int
    reused_traces: int
    feedback_added: int


def place_draw(tracker: MlflowTracker, runs: Sequence[JudgedRun], drawn: Draw) -> PlacedDraw:
    """Give every drawn claim a trace of its run with its judge feedback, and mark it with its inclusion
    probability; marks of claims this draw left out are removed (module doc). Traces and their feedback are
    MLflow's: another tracker's store has no place for them."""
    import mlflow

    if not isinstance(tracker, MlflowTracker):
        raise ValueError(f"labels are drawn onto MLflow traces; tracking={type(tracker).__name__} keeps none: "
                         "run `ragsweep labels` on an MLflow store (--tracking mlflow)")

    client, experiment_id = tracker.client(), tracker.experiment_id()
    traces = list(experiment_traces(client, experiment_id))
    found = _by_question(traces)
    wanted: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for claim, inclusion in drawn.claims:
        wanted[(claim.run_id, claim.query_id)][claim.feedback] = inclusion
    records = _records(runs, wanted)
    made: dict[tuple[str, str], str] = {}
    for run_id in sorted({run_id for run_id, _ in wanted}):
        missing = [key for key in sorted(wanted) if key[0] == run_id and key not in found]
        made.update(zip(missing, log_traces([records[key] for key in missing], run_id, experiment_id), strict=True))
    if made:
        mlflow.flush_trace_async_logging()
    added = sum(log_claim_feedback(trace_id, records[key]) for key, trace_id in made.items())
    for key, trace in found.items():
        if key in wanted:
            added += _add_missing_feedback(trace, records[key], wanted[key])
    marks = {(made.get(key) or found[key].info.trace_id): {INCLUSION_TAG + name: repr(inclusion)
                                                           for name, inclusion in names.items()}
             for key, names in wanted.items()}
    for trace_id in made.values():
        client.set_trace_tag(trace_id, REBUILT_TAG, "per_query.jsonl")
    _mark(client, {trace.info.trace_id: _marks_of(trace) for trace in traces}, marks)
    return PlacedDraw(len(made), len(wanted) - len(made), added)


def _by_question(traces: Sequence[Any]) -> dict[tuple[str, str], Any]:
    """Each (run id, question id)'s earliest trace."""
    found: dict[tuple[str, str], Any] = {}
    for trace in sorted(traces, key=lambda t: (t.info.request_time, t.info.trace_id)):
        run_id, query_id = trace.info.trace_metadata.get(SOURCE_RUN), trace.info.tags.get(QUERY_TAG)
        if run_id and query_id:
            found.setdefault((run_id, query_id), trace)
    return found


def _records(runs: Sequence[JudgedRun], wanted: dict[tuple[str, str], dict[str, float]]) -> dict[tuple, dict]:
    """The trace record of every question with a drawn claim, from its run's per_query.jsonl line."""
    records = {}
    for run in runs:
        for record in run.records:
            key = (run.run_id, str(record["id"]))
            if key in wanted:
                records[key] = trace_record(record, run.judge, run.threshold)
    return records


def _add_missing_feedback(trace: Any, record: dict, names: dict[str, float]) -> int:
    """The judge's feedback of drawn claims a run's own trace lacks (a trace logged before claim feedback)."""
    present = {a.name for a in trace.info.assessments or [] if a.source.source_type == "LLM_JUDGE"}
    feedback = [f for f in record["feedback"] if f["name"] in names and f["name"] not in present]
    return log_claim_feedback(trace.info.trace_id, {**record, "feedback": feedback}) if feedback else 0


def _marks_of(trace: Any) -> dict[str, str]:
    return {key: value for key, value in (trace.info.tags or {}).items() if key.startswith(INCLUSION_TAG)}


def _mark(client: Any, current: dict[str, dict[str, str]], marks: dict[str, dict[str, str]]) -> None:
    """Set the inclusion tags of `marks` and delete every other one the traces hold."""
    for trace_id in sorted(set(current) | set(marks)):
        now, then = current.get(trace_id, {}), marks.get(trace_id, {})
        for key in sorted(set(now) - set(then)):
            client.delete_trace_tag(trace_id, key)
        for key, value in sorted(then.items()):
            if now.get(key) != value:
                client.set_trace_tag(trace_id, key, value)

