"""`ragsweep diff RUN_A RUN_B`: two runs question by question, where they differ most first.

A mean hides which questions moved. Each row pairs one question's answers, metric values and retrieved
spans from both runs' `per_query.jsonl`; rows are sorted by the absolute difference of one metric
(default: answer_f1 when both runs answered, else token_iou), so the questions a change helped or hurt
most come first. Two runs whose questions differ (removed, added or reworded) are refused, naming them, unless
told to compare the ones both have unchanged (results.question_sets).
"""

from __future__ import annotations

import html
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ragsweep.metrics import registry
from ragsweep import per_query
from ragsweep.results.exported import ResultsError
from ragsweep.results.question_sets import FAIL, record_hashes, same_questions
from ragsweep.tracking.base import RunStore
from ragsweep.tracking.runs import download_per_query


@dataclass(frozen=True)
class RunSide:
    run_id: str
    label: str
    records: dict[str, dict]  # question id -> its per_query.jsonl record


@dataclass(frozen=True)
class Diff:
    a: RunSide
    b: RunSide
    metric: str
    table: pd.DataFrame  # one row per question both runs have (unchanged), largest |b - a| on `metric` first
    notes: tuple[str, ...] = ()  # on the questions compared (results.question_sets)

    def text(self, top: int | None = None) -> str:
        """The table as plain text: per question, its metric in both runs, both answers and both spans."""
        lines = [f"A = {self.a.label} ({self.a.run_id})", f"B = {self.b.label} ({self.b.run_id})",
                 f"{len(self.table)} questions in both, sorted by |B - A| on {self.metric}; "
                 f"{int((self.table['difference'] != 0).sum())} differ", ""]
        for _, row in (self.table if top is None else self.table.head(top)).iterrows():
            lines.append(f"{row['id']}  {self.metric}: A {_four_places(row['a'])}  B {_four_places(row['b'])}  "
                         f"B - A {_four_places(row['difference'], signed=True)}")
            lines.append(f"  question: {row['question']}")
            for side in ("a", "b"):
                metrics = ", ".join(f"{name} {_four_places(value)}" for name, value in row[f"{side}_metrics"].items())
                lines.append(f"  {side.upper()} spans: {row[f'{side}_spans']}")
                if isinstance(row[f"{side}_answer"], str):  # a run that generated nothing has none (None or NaN)
                    lines.append(f"  {side.upper()} answer: {row[f'{side}_answer']}")
                if metrics:
                    lines.append(f"  {side.upper()} {metrics}")
            lines.append("")
        return "\n".join(lines)

    def html(self) -> str:
        """The table as a self-contained HTML page, the two runs side by side."""
        head = "".join(f"<th>{html.escape(name)}</th>" for name in
                       ("question", f"{self.metric} A", f"{self.metric} B", "B - A", "A: answer, spans, metrics",
                        "B: answer, spans, metrics"))
        body = []
        for _, row in self.table.iterrows():
            cells = [f"<b>{html.escape(str(row['id']))}</b><br>{html.escape(str(row['question']))}",
                     _four_places(row["a"]), _four_places(row["b"]), _four_places(row["difference"], signed=True),
                     *(_side_html(row, side) for side in ("a", "b"))]
            body.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
        title = html.escape(f"ragsweep diff: {self.a.label} vs {self.b.label}")
        return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title><style>"
                "body{font-family:sans-serif;margin:1.5em;max-width:100%}table{border-collapse:collapse;"
                "table-layout:fixed;width:100%}td,th{border:1px solid #ccc;padding:4px;vertical-align:top;"
                "overflow-wrap:anywhere;font-size:13px}th{background:#f3f3f3}</style></head><body>"
                f"<h1>{title}</h1><p>A = {html.escape(self.a.run_id)}, B = {html.escape(self.b.run_id)}; "
                f"{len(self.table)} questions in both, sorted by |B - A| on {html.escape(self.metric)}.</p>"
                f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></body></html>\n")


def diff_runs(tracker: RunStore, run_a: str, run_b: str, metric: str | None = None,
              on_changed_questions: str = FAIL) -> Diff:
    """The question-by-question comparison of two job runs; ResultsError naming the run or metric that is missing,
    or the questions that differ between them (unless `on_changed_questions` is compare-common)."""
    a, b = _side(tracker, run_a), _side(tracker, run_b)
    if not any(question in b.records for question in a.records):
        raise ResultsError(f"runs {run_a} and {run_b} share no question id (different datasets?); diff two runs "
                           "on one dataset")
    compared = same_questions(record_hashes(a.records.values()), record_hashes(b.records.values()),
                              on_changed_questions, (f"run A ({run_a})", f"run B ({run_b})"),
                              "diff two runs on the same questions")
    shared = compared.questions
    answered = all(_has(side, registry.DEFAULT_ANSWER_RANKING) for side in (a, b))
    metric = metric or (registry.DEFAULT_ANSWER_RANKING if answered else registry.DEFAULT_RANKING)
    if metric not in registry.METRICS or not registry.METRICS[metric].per_question:
        raise ResultsError(f"--metric {metric}: not a per-question metric; choose one of "
                           f"{', '.join(registry.names(rankable=True, per_question=True))}")
    for side in (a, b):
        if not _has(side, metric):
            raise ResultsError(f"--metric {metric}: run {side.run_id} has no {metric} per question")
    rows = []
    for question in shared:
        ra, rb = a.records[question], b.records[question]
        va, vb = ra["metrics"].get(metric), rb["metrics"].get(metric)
        difference = vb - va if va is not None and vb is not None else float("nan")
        rows.append({"id": question, "question": ra.get("question", ""), "a": va, "b": vb, "difference": difference,
                     "a_answer": ra.get("answer"), "b_answer": rb.get("answer"),
                     "a_spans": _spans(ra), "b_spans": _spans(rb),
                     "a_metrics": _shown(ra, metric), "b_metrics": _shown(rb, metric)})
    table = pd.DataFrame(rows)
    order = table["difference"].abs().fillna(-1.0)  # a question only one run could score goes last
    table = table.assign(order=order).sort_values(["order", "id"], ascending=[False, True], kind="stable")
    return Diff(a, b, metric, table.drop(columns="order").reset_index(drop=True), compared.lines)


def _side(tracker: RunStore, run_id: str) -> RunSide:
    try:
        run = tracker.run(run_id)
        with tempfile.TemporaryDirectory(prefix="ragsweep-diff-") as folder:
            path = download_per_query(tracker, run_id, folder)
            records = {record["id"]: record for record in per_query.records(path)}
    except ValueError as error:
        raise ResultsError(f"{error}; give two job runs' ids (the run_id column of `ragsweep best`)") from None
    return RunSide(run_id, run.label or run_id, records)


def _has(side: RunSide, metric: str) -> bool:
    return any(metric in record["metrics"] for record in side.records.values())


def _spans(record: dict) -> str:
    return ", ".join(f"{hit['doc_id']}[{hit['start']}:{hit['end']}]" for hit in record.get("retrieved", []))


def _shown(record: dict, sorted_by: str) -> dict[str, float]:
    return {name: record["metrics"][name] for name in registry.names(headline=True)
            if name != sorted_by and name in record["metrics"]}


def _four_places(value, signed: bool = False) -> str:
    """A metric as the diff prints it: four decimals (signed for a difference), `-` where a run has none."""
    if value is None or pd.isna(value):
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _side_html(row: pd.Series, side: str) -> str:
    answer = row[f"{side}_answer"]
    metrics = ", ".join(f"{name} {_four_places(value)}" for name, value in row[f"{side}_metrics"].items())
    return ((f"{html.escape(answer)}<br>" if isinstance(answer, str) else "")
            + f"<small>{html.escape(row[f'{side}_spans'])}</small>" + (f"<br><i>{metrics}</i>" if metrics else ""))


def write_html(diff: Diff, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(diff.html(), encoding="utf-8")
    return path
