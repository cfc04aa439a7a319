"""People's verdicts on judged claims, read back from the feedback on an experiment's traces.

A judged run logs each traced claim's verdict as the feedback `support/<i>` (source LLM_JUDGE, the claim in
its metadata). A person who overrides it in MLflow's UI (or through its API) adds a feedback of source HUMAN;
those become the `{"id", "claim", "label"}` lines `judge.labels` reads
(`ragsweep.judging.calibration.claim_labels`), with the judge and its score, the probability `ragsweep labels
sample` drew the claim with (its trace's tag `ragsweep.inclusion.support/<i>`; 1.0 for a claim people labelled
that the current draw did not pick, which then counts as a label of its own stratum) and the run's generator
option.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from typing import Any

from ragsweep.tracking.store import open_client
from ragsweep.tracking.traces import INCLUSION_TAG

log = logging.getLogger(__name__)

SUPPORT_PREFIX = "support/"
YES = ("yes", "true", "supported", "1")
NO = ("no", "false", "unsupported", "0")


def human_labels(uri: str, experiment: str) -> list[dict[str, Any]]:
    """Every claim a person labelled in `experiment`, one line each, sorted by question and claim.

    A claim labelled on several traces (configurations that gave the same answer) keeps its latest label;
    labels that are not a yes/no (or a score, read as yes from 0.5) are left out with a warning.
    """
    client = open_client(uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise ValueError(f"no experiment {experiment!r} in {uri}")
    latest: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    unreadable = disagreements = 0
    generators: dict[str, str | None] = {}
    for trace in experiment_traces(client, found.experiment_id):
        assessments = trace.info.assessments or []
        by_id = {assessment.assessment_id: assessment for assessment in assessments}
        for assessment in assessments:
            if not _is_human_support(assessment):
                continue
            judged = by_id.get(assessment.overrides) or _judge_feedback(assessments, assessment.name)
            label = _label(getattr(assessment, "value", None))
            if judged is None or label is None or not {"query_id", "claim"} <= set(judged.metadata or {}):
                unreadable += 1
                continue
            key = (judged.metadata["query_id"], judged.metadata["claim"])
            when = assessment.last_update_time_ms or assessment.create_time_ms or 0
            line = {"id": key[0], "claim": key[1], "label": label, "trace_id": trace.info.trace_id,
                    "labelled_by": assessment.source.source_id, "judge": judged.source.source_id,
                    "judge_score": getattr(judged, "value", None), "inclusion": _inclusion(trace, judged.name),
                    "generator": _generator(client, trace, generators), "passage": judged.rationale}
            if key in latest:
                disagreements += latest[key][1]["label"] != label
                if latest[key][0] >= when:
                    continue
            latest[key] = (when, line)
    if unreadable:
        log.warning("%d people's feedback on support/<i> left out: not a yes/no label, or no judged claim under it",
                    unreadable)
    if disagreements:
        log.warning("%d claims were labelled differently on different traces; each keeps its latest label",
                    disagreements)
    return [line for _, (_, line) in sorted(latest.items())]


def experiment_traces(client: Any, experiment_id: str) -> Iterator[Any]:
    """Every trace of the experiment, without its spans, page by page."""
    token = None
    while True:
        page = client.search_traces(locations=[experiment_id], include_spans=False, max_results=500,
                                    page_token=token)
        yield from page
        token = page.token
        if not token:
            return


def _inclusion(trace: Any, name: str) -> float:
    """The probability `labels sample` drew claim `name` of the trace with; 1.0 when it did not draw it."""
    try:
        inclusion = float((trace.info.tags or {}).get(INCLUSION_TAG + name, 1.0))
    except ValueError:
        inclusion = math.nan
    if not 0 < inclusion <= 1:
        log.warning("trace %s: tag %s%s is not a probability; its label counts as not drawn (1.0)",
                    trace.info.trace_id, INCLUSION_TAG, name)
        return 1.0
    return inclusion


def _generator(client: Any, trace: Any, known: dict[str, str | None]) -> str | None:
    """The `generator` option of a trace's run (None for a run gone from the store, or without one)."""
    from mlflow.exceptions import MlflowException

    run_id = (trace.info.trace_metadata or {}).get("mlflow.sourceRun")
    if run_id and run_id not in known:
        try:
            known[run_id] = client.get_run(run_id).data.params.get("generator")
        except MlflowException:
            known[run_id] = None
    return known.get(run_id) if run_id else None


def _is_human_support(assessment: Any) -> bool:
    return (assessment.name.startswith(SUPPORT_PREFIX) and assessment.source.source_type == "HUMAN"
            and assessment.valid is not False)


def _judge_feedback(assessments: list[Any], name: str) -> Any | None:
    return next((a for a in assessments if a.name == name and a.source.source_type == "LLM_JUDGE"), None)


def _label(value: Any) -> int | None:
    """1 (supported) or 0 from a person's value: a yes/no, a boolean, or a score read as yes from 0.5."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and 0 <= value <= 1:
        return int(value >= 0.5)
    if isinstance(value, str) and value.strip().lower() in YES + NO:
        return int(value.strip().lower() in YES)
    return None
