"""A self-contained HTML report of an experiment: is the winner really better, and at what cost?

Plots are PNGs inlined as data URIs (results.plots), so the one file can be mailed, attached to a run or
opened offline. Significance comes from paired bootstrap over the queries both configs answered, read
from each run's `per_query.jsonl`. Runs with a generator also get a table of their answer metrics and
costs; an answer metric is compared only between runs, and on questions, that have it. Runs with a
judge get a table of their judged metrics beside the judge that scored them and its measured AUC; when
different judges scored them, the report says so, and never tests one judge's numbers against another's.
Runs corrected by people's labels (`judge.labels`) show their corrected faithfulness and groundedness with
intervals, and on those metrics the winner is tested by the corrected paired difference (results.corrected).
"""

from __future__ import annotations

import html
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ragsweep.metrics import registry
from ragsweep.metrics.aggregate import paired_test
from ragsweep.tracking import judges
from ragsweep.results.best import candidates
from ragsweep.results.exported import read_hashes, read_per_query
from ragsweep.results.question_sets import FAIL, same_questions
from ragsweep.results.corrected import CORRECTABLE, ComparedRun, CorrectedDifference, difference_line, paired_corrected
from ragsweep.results.effects import display_table, runs_effects
from ragsweep.results.plots import MAX_BARS, bars, effects_chart, heatmap, img_or_note, img_tag, k_curves, pareto
from ragsweep.tracking.judges import JUDGED_RANKABLE, JUDGED_RECORDED
from ragsweep.tracking.base import RunStore
from ragsweep.tracking.racing import stopped_lines
from ragsweep.tracking.runs import download_per_query, generators, has_generator
from ragsweep.tracking.table import metric_names

# answer metrics, costs, and the latency of answering and end to end
GENERATION_COLUMNS = (*registry.names(stage="answer"),
                      *(name for name in registry.names(stage="latency")
                        if name.startswith(("generation_", "latency_"))))
RUNNERS_UP = 5  # configs the winner is tested against


@dataclass
class ExperimentReport:
    """The HTML report `write_report` wrote of an experiment's runs, and what it compared."""

    path: Path
    dataset: str  # the dataset whose runs it compares
    datasets: list[str]  # every dataset the experiment has FINISHED runs on
    metric: str  # what it ranks by


def write_report(tracker: RunStore, metric: str | None, output: Path, dataset: str | None = None,
                 bootstrap_samples: int = 10_000, on_changed_questions: str = FAIL) -> ExperimentReport:
    """The HTML report of the experiment's runs on one dataset (by default the newest run's), ranked by `metric`
    (None: the metric of the stage the runs vary). QuestionsChanged when the best configuration and a runner-up it
    is tested against answered other questions, unless `on_changed_questions` is compare-common
    (results.question_sets)."""
    found = candidates(tracker, metric, dataset)
    metric = found.metric
    runs = found.runs
    scored = runs[runs[metric].notna()].reset_index(drop=True)  # an answer metric: runs with a generator
    judged = runs[[judge is not None for judge in judges.run_judges(runs)]]
    with tempfile.TemporaryDirectory(prefix="ragsweep-report-") as folder:
        summaries = {run_id: json.loads(_artifact(tracker, run_id, "metrics.json", folder).read_text())
                     for run_id in {*scored.run_id[:MAX_BARS], *judged.run_id[:MAX_BARS]}}
        tests = _significance(tracker, scored, metric, folder, bootstrap_samples, summaries, on_changed_questions)
    without = "a judge" if metric in JUDGED_RANKABLE else "a generator"
    unscored = (f"<p>{len(runs) - len(scored)} configurations without {without} have no {html.escape(metric)}: "
                "they are in the ranking table only.</p>" if len(scored) < len(runs) else "")
    by = _judged_by(scored, metric)
    sections = [
        ("Ranking", _notes(judges.judge_notes(runs)) + _table_html(judges.summary_table(runs, found.ranked_by))
         + unscored + _stopped_in_races(tracker)),
        *([("Answers and what they cost (configurations with a generator)", _generation_table(runs))]
          if has_generator(runs).any() else []),
        *([("Judged answers and the judges that scored them (configurations with a judge)",
            _judged_table(judged, summaries))] if len(judged) else []),
        (f"Is the best config really better? (paired bootstrap on {metric}{by})", tests),
        (f"Which setting moved {metric}: effects with 95% intervals{by}",
         _effects(tracker, scored, metric, bootstrap_samples)),
        (f"{metric} by configuration (95% bootstrap CI){by}",
         img_tag(bars(scored, summaries, metric)) if registry.metric(metric).per_question else _micro_note(metric)),
        (f"{metric} against k", img_or_note(k_curves(scored, metric), "no configuration was run at more than one k")),
        (f"{metric} against median end-to-end latency per question (Pareto front in red)",
         _pareto_note(scored) + img_or_note(pareto(scored, metric), "no run recorded its latency")),
        (f"{metric} per corpus{by}", img_tag(heatmap(scored, summaries, metric)) if registry.metric(metric).per_question
         else _micro_note(metric)),
    ]
    body = "".join(f"<h2>{html.escape(title)}</h2>\n{content}\n" for title, content in sections)
    others = [name for name in found.datasets if name != found.dataset]
    subtitle = (f"{len(runs)} configurations on dataset {found.dataset} ranked by {metric}"
                + (f" (runs on {', '.join(others)} are in another report: --dataset NAME)" if others else "")
                + f"; written {time.strftime('%Y-%m-%d %H:%M')}")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(_PAGE.format(title=html.escape(f"ragsweep report: {tracker.experiment}"),
                                   subtitle=html.escape(subtitle), body=body))
    return ExperimentReport(output, found.dataset, found.datasets, metric)


def _significance(tracker: RunStore, runs: pd.DataFrame, metric: str, folder: str, samples: int,
                  summaries: dict[str, dict], on_changed_questions: str = FAIL) -> str:
    if len(runs) < 2:
        return "<p>Only one configuration: nothing to compare.</p>"
    if not registry.metric(metric).per_question:
        return _micro_note(metric)
    scorers = judges.run_judges(runs) if metric in JUDGED_RANKABLE else [None] * len(runs)
    paths = {run_id: download_per_query(tracker, run_id, tempfile.mkdtemp(dir=folder))
             for run_id in runs.run_id[: RUNNERS_UP + 1]}
    questions = {run_id: read_per_query(path) for run_id, path in paths.items()}
    hashes = {run_id: read_hashes(path) for run_id, path in paths.items()}
    per_query = {run_id: {question: values[metric] for question, values in found.items()  # answer metrics:
                          if metric in values} for run_id, found in questions.items()}  # answered questions
    best_id = runs.run_id[0]
    labelled = metric in CORRECTABLE and any(f"{metric}_corrected" in summaries.get(run_id, {}) for run_id in questions)
    rows, corrections, notes = [], [], []
    for position in range(1, min(RUNNERS_UP + 1, len(runs))):
        other_id = runs.run_id[position]
        compared = same_questions(hashes[best_id], hashes[other_id], on_changed_questions,
                                  (f"the best configuration ({runs.label[0]})", f"runner-up {runs.label[position]}"),
                                  "report runs on the same questions: sweep them again on the dataset as it is now")
        notes += [line for line in compared.lines if line not in notes]
        kept = set(compared.questions)
        shared = sorted(set(per_query[best_id]) & set(per_query[other_id]) & kept)
        pair = {run_id: {question: value for question, value in per_query[run_id].items() if question in kept}
                for run_id in (best_id, other_id)}
        scorer = scorers[position]
        if scorers[0] is not None and (scorer is None or not scorers[0].same_judge(scorer)):  # another scale
            verdict = f"not comparable: judged by {scorer or 'an unknown judge'}, the best by {scorers[0]}"
            rows.append({"runner-up": runs.label[position], "queries": len(shared), "verdict": verdict})
            continue
        test = paired_test(pair[best_id], pair[other_id], samples)
        if not test["queries"]:  # same dataset name, other questions (e.g. an edited native dataset)
            rows.append({"runner-up": runs.label[position], "queries": 0, "verdict": test["verdict"]})
            continue
        row = {"runner-up": runs.label[position], "queries": test["queries"],
               f"best - runner-up ({metric})": round(test["difference"], 4),
               "95% CI": f"[{test['ci_low']:.4f}, {test['ci_high']:.4f}]",
               "p-value": round(test["p_value"], 4), "verdict": test["verdict"]}
        if labelled:
            found = paired_corrected(metric, *(ComparedRun(runs.label[at], summaries.get(run_id, {}),
                                                           {q: questions[run_id][q] for q in compared.questions})
                                               for at, run_id in ((0, best_id), (position, other_id))))
            cells = _corrected_cells(found)  # the verdict, from the corrected interval when there is one, goes last
            row = {**{key: value for key, value in row.items() if key != "verdict"}, **cells,
                   "verdict": cells.get("verdict", row["verdict"])}
            corrections.append(found)
        rows.append(row)
    intro = (f"<p>Best: <b>{html.escape(str(runs.label[0]))}</b>. Each row resamples the queries both "
             f"configurations have {html.escape(metric)} for ({samples} paired resamples; an answer metric is "
             "missing where generation failed or a question has no reference answer). "
             "'better' means p &lt; 0.05.</p>")
    if labelled:
        intro += ("<p>Corrected by people's labels: where both configurations carry the same judge error rates, "
                  f"the difference of their {html.escape(metric)} corrected by them, with its 95% interval and the "
                  "labels it rests on; the verdict then follows that interval (better: above 0).</p>")
    lines = "".join(f"<p>{html.escape(difference_line(found))}</p>" for found in corrections if difference_line(found))
    return intro + _notes(notes) + _table_html(pd.DataFrame(rows)) + lines


def _effects(tracker: RunStore, runs: pd.DataFrame, metric: str, samples: int) -> str:
    """The main effects and the two-way interactions that matter of the settings the runs' labels name
    (results.effects), as a chart and a table; a note when the runs give nothing to estimate."""
    if not registry.metric(metric).per_question:
        return _micro_note(metric)
    if len(judges.mixed_judges(runs)) > 1:
        return "<p><i>Judged by different judges, whose scores are not comparable: no effects estimated.</i></p>"
    if len(runs) < 2:
        return "<p><i>Only one configuration: no effects to estimate.</i></p>"
    try:
        found = runs_effects(tracker, runs, metric, min(samples, 2000))
    except ValueError as error:
        return f"<p><i>No effects estimated: {html.escape(str(error))}.</i></p>"
    notes = "".join(f"<p>{html.escape(line)}</p>" for line in found.notes())
    return (f"<p>{html.escape(found.model_line())} (<code>ragsweep effects</code> prints them for one sweep and logs "
            "them to it).</p>"
            + img_or_note(effects_chart(found.table, metric), "no setting's effect could be separated")
            + _table_html(display_table(found)) + notes)


def _corrected_cells(found: CorrectedDifference) -> dict:
    """The corrected columns of one row of the significance table, and its verdict from the corrected interval."""
    if found.difference is None:
        return {"corrected 95% CI": found.note}
    difference = found.difference
    verdict = ("better" if difference.ci_low > 0 else "worse" if difference.ci_high < 0 else "not distinguishable")
    return {"corrected best - runner-up": round(difference.value, 4),
            "corrected 95% CI": f"[{difference.ci_low:.4f}, {difference.ci_high:.4f}]",
            "labels": difference.n_labelled, "verdict": f"{verdict} (corrected)"}


def _generation_table(runs: pd.DataFrame) -> str:
    """The configurations with a generator: answer metrics, costs and latency, in the ranking's order."""
    runs = runs[has_generator(runs)]
    table = pd.DataFrame({"config": runs.label, "generator": generators(runs)})
    for name in GENERATION_COLUMNS:
        if name in metric_names(runs):
            table[name] = runs[name].round(4)
    return _table_html(table)


def _judged_table(runs: pd.DataFrame, summaries: dict) -> str:
    """The judged configurations: each one's judge (with AUC), judged metrics, triad bands and failure rates."""
    notes = judges.judge_notes(runs)
    table = pd.DataFrame({"config": runs.label, "generator": generators(runs),
                          "judge": judges.judge_labels(judges.run_judges(runs))})
    for name in JUDGED_RECORDED:
        if name in metric_names(runs) and runs[name].notna().any():
            table[name] = runs[name].round(4)
        if name == "faithfulness_micro" and name in table:
            table["faithfulness_micro 95% CI (Wilson)"] = [_interval(summaries.get(run_id, {}).get(name))
                                                           for run_id in runs.run_id]
        if name.endswith("_corrected") and name in table:
            table[f"{name} 95% CI"] = [_interval(summaries.get(run_id, {}).get(name)) for run_id in runs.run_id]
            table[f"{name} labels"] = [summaries.get(run_id, {}).get(name, {}).get("n_labelled", "")
                                       for run_id in runs.run_id]
    corrected = ("<p>*_corrected: the judge's share corrected by people's labels (judge.labels), with its 95% "
                 "interval and the labelled claims it rests on.</p>" if any(c.endswith("_corrected") for c in table)
                 else "")
    return (_notes(notes) + "<p>triad_excellent/good/fair/poor: the share of questions whose triad_overall is "
            "&ge; 0.85, 0.70&ndash;0.85, 0.50&ndash;0.70, &lt; 0.50. Micro averages pool every claim of a run.</p>"
            + corrected + _table_html(table))


def _judged_by(runs: pd.DataFrame, metric: str) -> str:
    """`; judge: lexical (AUC 0.52)` for a section title on a judged metric (`; judges differ` for several)."""
    if metric not in JUDGED_RANKABLE:
        return ""
    distinct = judges.mixed_judges(runs)
    if len(distinct) > 1:
        return f"; {len(distinct)} different judges, not comparable: see the judge column"
    return f"; judge: {distinct[0]}" if distinct else ""


def _micro_note(metric: str) -> str:
    return (f"<p><i>{html.escape(metric)} pools every claim of a run: it has no per-question or per-corpus values. "
            f"Its interval is in the judged table; {html.escape(metric.removesuffix('_micro'))} has them.</i></p>")


def _interval(summary: dict | None) -> str:
    return f"[{summary['ci95'][0]:.4f}, {summary['ci95'][1]:.4f}]" if summary and "ci95" in summary else ""


def _stopped_in_races(tracker: RunStore) -> str:
    """The configurations a race stopped early: not ranked (they did not run every question), each with why."""
    lines = stopped_lines(tracker)
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return f"<p>Stopped early in a race, not ranked (they did not run every question):</p><ul>{items}</ul>"


def _notes(lines: list[str]) -> str:
    return "".join(f"<p><b>{html.escape(line)}</b></p>" if line.startswith("Not comparable")
                   else f"<p>{html.escape(line)}</p>" for line in lines)


def _pareto_note(runs: pd.DataFrame) -> str:
    """Says what the latency axis adds up, and warns when it adds up different stages for different runs."""
    generated = has_generator(runs)
    if generated.all():
        return "<p>Latency: search + rerank + generation per question (p50).</p>"
    if not generated.any():
        return "<p>Latency: search + rerank per question (p50); no configuration generated answers.</p>"
    return ("<p><b>Not comparable on latency:</b> configurations with a generator (triangles) count search + rerank "
            "+ generation, those without (circles) only search + rerank. Each group has its own Pareto front.</p>")


def _table_html(table: pd.DataFrame) -> str:
    """A table that scrolls within the page's width rather than widen the page."""
    return f'<div class="scroll">{table.to_html(index=False, border=0, classes="ranking", na_rep="")}</div>'


def _artifact(tracker: RunStore, run_id: str, name: str, folder: str) -> Path:
    return tracker.download(run_id, name, tempfile.mkdtemp(dir=folder))


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
table.ranking {{ border-collapse: collapse; font-size: 12px; }}
table.ranking th, table.ranking td {{ padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: left; }}
img {{ max-width: 100%; }}
div.scroll {{ overflow-x: auto; max-width: 100%; }}
</style></head>
<body><h1>{title}</h1><p>{subtitle}</p>
{body}</body></html>
"""
