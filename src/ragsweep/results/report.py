"""A self-contained HTML report of an experiment: is the winner really better, and at what cost?

Plots are PNGs inlined as data URIs, so the one file can be mailed, attached to a run or opened
offline. Significance comes from paired bootstrap over the queries both configs answered, read
from each run's `per_query.jsonl`. Runs with a generator also get a table of their answer metrics and
costs; an answer metric is compared only between runs, and on questions, that have it. Runs with a
judge get a table of their judged metrics beside the judge that scored them and its measured AUC; when
different judges scored them, the report says so, and never tests one judge's numbers against another's.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ragsweep.metrics import registry
from ragsweep.metrics.aggregate import paired_test
from ragsweep.tracking import judges
from ragsweep.results.best import candidates, read_per_query
from ragsweep.tracking.judges import JUDGED_RANKABLE, JUDGED_RECORDED
from ragsweep.runner.identity import NON_RESULT_KEYS
from ragsweep.tracking.mlflow_tracker import MlflowTracker
from ragsweep.metrics.answers import ANSWER_METRICS
from ragsweep.metrics.costs import COST_METRICS
from ragsweep.tracking.runs import generators, has_generator

# end to end per question (search + rerank + generation; without a generator, search + rerank), the
# median: steadier than p95 on few questions
LATENCY = "metrics.latency_ms_p50"
GENERATION_COLUMNS = (*ANSWER_METRICS, *COST_METRICS, "generation_ms_p50", "generation_ms_p95", "latency_ms_p50",
                      "latency_ms_p95")
MAX_BARS = 25  # configs drawn in bar charts and the heatmap; the table lists them all
RUNNERS_UP = 5  # configs the winner is tested against
# k, and the params that say where results go rather than what was computed: ignored when grouping k-curves.
_NOT_RESULT_PARAM = re.compile(rf"^params\.(k|{'|'.join(sorted(NON_RESULT_KEYS))})(\.|$)")


@dataclass
class Report:
    path: Path
    dataset: str  # the dataset whose runs it compares
    datasets: list[str]  # every dataset the experiment has FINISHED runs on
    metric: str  # what it ranks by


def write_report(tracker: MlflowTracker, metric: str | None, output: Path, dataset: str | None = None,
                 bootstrap_samples: int = 10_000) -> Report:
    """The HTML report of the experiment's runs on one dataset (by default the newest run's), ranked by `metric`
    (None: the metric of the stage the runs vary)."""
    found = candidates(tracker, metric, dataset)
    metric = found.metric
    runs = found.runs
    scored = runs[runs[f"metrics.{metric}"].notna()].reset_index(drop=True)  # an answer metric: runs with a generator
    judged = runs[[judge is not None for judge in judges.run_judges(runs)]]
    with tempfile.TemporaryDirectory(prefix="ragsweep-report-") as folder:
        summaries = {run_id: json.loads(_artifact(tracker, run_id, "metrics.json", folder).read_text())
                     for run_id in {*scored.run_id[:MAX_BARS], *judged.run_id[:MAX_BARS]}}
        tests = _significance(tracker, scored, metric, folder, bootstrap_samples)
    without = "a judge" if metric in JUDGED_RANKABLE else "a generator"
    unscored = (f"<p>{len(runs) - len(scored)} configurations without {without} have no {html.escape(metric)}: "
                "they are in the ranking table only.</p>" if len(scored) < len(runs) else "")
    by = _judged_by(scored, metric)
    sections = [
        ("Ranking", _notes(judges.judge_notes(runs)) + _table_html(judges.summary_table(runs, metric)) + unscored),
        *([("Answers and what they cost (configurations with a generator)", _generation_table(runs))]
          if has_generator(runs).any() else []),
        *([("Judged answers and the judges that scored them (configurations with a judge)",
            _judged_table(judged, summaries))] if len(judged) else []),
        (f"Is the best config really better? (paired bootstrap on {metric}{by})", tests),
        (f"{metric} by configuration (95% bootstrap CI){by}",
         _image(_bars(scored, summaries, metric)) if registry.metric(metric).per_question else _micro_note(metric)),
        (f"{metric} against k", _image_or_note(_k_curves(scored, metric), "no configuration was run at more than one k")),
        (f"{metric} against median end-to-end latency per question (Pareto front in red)",
         _pareto_note(scored) + _image_or_note(_pareto(scored, metric), "no run recorded its latency")),
        (f"{metric} per corpus{by}", _image(_heatmap(scored, summaries, metric)) if registry.metric(metric).per_question
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
    return Report(output, found.dataset, found.datasets, metric)


def _significance(tracker: MlflowTracker, runs: pd.DataFrame, metric: str, folder: str, samples: int) -> str:
    if len(runs) < 2:
        return "<p>Only one configuration: nothing to compare.</p>"
    if not registry.metric(metric).per_question:
        return _micro_note(metric)
    scorers = judges.run_judges(runs) if metric in JUDGED_RANKABLE else [None] * len(runs)
    per_query = {run_id: {question: values[metric] for question, values in  # answer metrics: answered questions
                          read_per_query(_artifact(tracker, run_id, "per_query.jsonl", folder)).items()
                          if metric in values}
                 for run_id in runs.run_id[: RUNNERS_UP + 1]}
    best_id = runs.run_id[0]
    rows = []
    for position in range(1, min(RUNNERS_UP + 1, len(runs))):
        other_id = runs.run_id[position]
        shared = sorted(set(per_query[best_id]) & set(per_query[other_id]))
        scorer = scorers[position]
        if scorers[0] is not None and (scorer is None or not scorers[0].same_judge(scorer)):  # another scale
            verdict = f"not comparable: judged by {scorer or 'an unknown judge'}, the best by {scorers[0]}"
            rows.append({"runner-up": runs.label[position], "queries": len(shared), "verdict": verdict})
            continue
        test = paired_test(per_query[best_id], per_query[other_id], samples)
        if not test["queries"]:  # same dataset name, other questions (e.g. an edited native dataset)
            rows.append({"runner-up": runs.label[position], "queries": 0, "verdict": test["verdict"]})
            continue
        rows.append({"runner-up": runs.label[position], "queries": test["queries"],
                     f"best - runner-up ({metric})": round(test["difference"], 4),
                     "95% CI": f"[{test['ci_low']:.4f}, {test['ci_high']:.4f}]",
                     "p-value": round(test["p_value"], 4), "verdict": test["verdict"]})
    intro = (f"<p>Best: <b>{html.escape(str(runs.label[0]))}</b>. Each row resamples the queries both "
             f"configurations have {html.escape(metric)} for ({samples} paired resamples; an answer metric is "
             "missing where generation failed or a question has no reference answer). "
             "'better' means p &lt; 0.05.</p>")
    return intro + _table_html(pd.DataFrame(rows))


def _bars(runs: pd.DataFrame, summaries: dict, metric: str):
    top = runs.iloc[:MAX_BARS]
    means = np.array([summaries[r][metric]["mean"] for r in top.run_id])
    lows = means - np.array([summaries[r][metric]["ci95"][0] for r in top.run_id])
    highs = np.array([summaries[r][metric]["ci95"][1] for r in top.run_id]) - means
    figure, axes = _figure(height=0.35 * len(top) + 1.2)
    positions = np.arange(len(top))[::-1]
    axes.barh(positions, means, xerr=[lows, highs], color="#4C72B0", ecolor="#333", capsize=2)
    axes.set_yticks(positions, [_short(name) for name in top.label], fontsize=8)
    axes.set_xlabel(metric)
    return figure


def _k_curves(runs: pd.DataFrame, metric: str):
    if "params.k" not in runs:
        return None
    keys = [c for c in runs.columns if c.startswith("params.") and not _NOT_RESULT_PARAM.match(c)]
    groups = [(group, frame) for group, frame in runs.groupby(keys, dropna=False) if frame["params.k"].nunique() > 1]
    if not groups:
        return None
    groups.sort(key=lambda item: -item[1][f"metrics.{metric}"].max())
    frames = [frame for _, frame in groups[:10]]
    figure, axes = _figure(height=4.5)
    for frame, label in zip(frames, curve_labels(frames, keys), strict=True):
        frame = frame.assign(k=frame["params.k"].astype(int)).sort_values("k")
        axes.plot(frame["k"], frame[f"metrics.{metric}"], marker="o", label=_short(label))
    axes.set_xlabel("k")
    axes.set_ylabel(metric)
    axes.legend(fontsize=7)
    return figure


def curve_labels(frames: list[pd.DataFrame], keys: list[str]) -> list[str]:
    """Each curve named by the settings that tell it from the other curves (`chunker=recursive`), not by its runs'
    label, which names only the overrides a run was given and so leaves a default option unnamed. Group options
    first; their settings (`chunker.size`) too when the options alone do not tell two curves apart."""
    firsts = [frame.iloc[0] for frame in frames]
    varying = [key for key in keys if len({str(row.get(key)) for row in firsts}) > 1 and not key.endswith("_target_")]
    options = [key for key in varying if "." not in key.removeprefix("params.")]

    def named(shown: list[str]) -> list[str]:
        return [",".join(f"{key.removeprefix('params.')}={row.get(key)}" for key in shown) or "defaults"
                for row in firsts]

    labels = named(options)
    return labels if len(set(labels)) == len(labels) else named(options + [k for k in varying if k not in options])


def _generation_table(runs: pd.DataFrame) -> str:
    """The configurations with a generator: answer metrics, costs and latency, in the ranking's order."""
    runs = runs[has_generator(runs)]
    table = pd.DataFrame({"config": runs.label, "generator": generators(runs)})
    for name in GENERATION_COLUMNS:
        if f"metrics.{name}" in runs:
            table[name] = runs[f"metrics.{name}"].round(4)
    return _table_html(table)


def _judged_table(runs: pd.DataFrame, summaries: dict) -> str:
    """The judged configurations: each one's judge (with AUC), judged metrics, triad bands and failure rates."""
    notes = judges.judge_notes(runs)
    table = pd.DataFrame({"config": runs.label, "generator": generators(runs),
                          "judge": judges.judge_labels(judges.run_judges(runs))})
    for name in JUDGED_RECORDED:
        if f"metrics.{name}" in runs and runs[f"metrics.{name}"].notna().any():
            table[name] = runs[f"metrics.{name}"].round(4)
        if name == "faithfulness_micro" and name in table:
            table["faithfulness_micro 95% CI (Wilson)"] = [_interval(summaries.get(run_id, {}).get(name))
                                                           for run_id in runs.run_id]
    return (_notes(notes) + "<p>triad_excellent/good/fair/poor: the share of questions whose triad_overall is "
            "&ge; 0.85, 0.70&ndash;0.85, 0.50&ndash;0.70, &lt; 0.50. Micro averages pool every claim of a run.</p>"
            + _table_html(table))


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


def _pareto(runs: pd.DataFrame, metric: str):
    if LATENCY not in runs or runs[LATENCY].isna().all():
        return None
    points = runs.assign(generated=has_generator(runs))[["label", "generated", LATENCY, f"metrics.{metric}"]].dropna()
    if points.empty:
        return None
    figure, axes = _figure(height=4.5)
    for generated, group in points.groupby("generated"):  # one front per group: their latencies add up other stages
        latency, quality = group[LATENCY].to_numpy(), group[f"metrics.{metric}"].to_numpy()
        front = pareto_front(latency, quality)
        marker, name = ("^", "with a generator: search + rerank + generation") if generated else (
            "o", "retrieval only: search + rerank")
        axes.scatter(latency, quality, color="#999", s=18, marker=marker, label=name)
        order = np.argsort(latency[front])
        axes.plot(latency[front][order], quality[front][order], color="#C44E52", marker=marker)
    label_points(axes, points[LATENCY].to_numpy(), points[f"metrics.{metric}"].to_numpy(),
                 [str(rank + 1) for rank in points.index])
    axes.set_title("each point numbered by its rank in the ranking table", fontsize=8)
    axes.set_xlabel("end-to-end ms per question (p50, the median)")
    axes.set_ylabel(metric)
    axes.legend(fontsize=7)
    return figure


_OFFSETS = ((4, 4), (4, -11), (-4, 4), (-4, -11), (4, 14), (-4, 14), (4, -21), (-4, -21), (14, -4), (-14, -4))


def label_points(axes, x: np.ndarray, y: np.ndarray, names: list[str]) -> None:
    """Every point labelled, none over another: points closer than 1.5% of both axes share one label (`1,4`),
    and each label takes the first of a few offsets around its point where it overlaps no label placed before."""
    span_x, span_y = (float(np.ptp(x)) or 1.0), (float(np.ptp(y)) or 1.0)
    clusters: list[tuple[float, float, list[str]]] = []
    for px, py, name in zip(x, y, names, strict=True):
        near = next((c for c in clusters if abs(c[0] - px) < 0.015 * span_x and abs(c[1] - py) < 0.015 * span_y), None)
        if near:
            near[2].append(name)
        else:
            clusters.append((float(px), float(py), [name]))
    axes.figure.tight_layout()  # the axes' final place and limits, so the boxes below are where they will be drawn
    axes.figure.canvas.draw()
    renderer = axes.figure.canvas.get_renderer()
    placed = []
    for px, py, members in clusters:
        for dx, dy in _OFFSETS:
            text = axes.annotate(",".join(members), (px, py), xytext=(dx, dy), textcoords="offset points", fontsize=7,
                                 ha="left" if dx > 0 else "right")
            box = text.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed):
                break
            text.remove()
        else:  # crowded everywhere: keep the first offset rather than drop the label
            text = axes.annotate(",".join(members), (px, py), xytext=_OFFSETS[0], textcoords="offset points", fontsize=7)
            box = text.get_window_extent(renderer)
        placed.append(box)


def pareto_front(cost: np.ndarray, quality: np.ndarray) -> np.ndarray:
    """True where no other point is at least as cheap and as good, and strictly better in one."""
    cost, quality = np.asarray(cost), np.asarray(quality)
    dominated = ((cost[None, :] <= cost[:, None]) & (quality[None, :] >= quality[:, None])
                 & ((cost[None, :] < cost[:, None]) | (quality[None, :] > quality[:, None])))
    return ~dominated.any(axis=1)


def _heatmap(runs: pd.DataFrame, summaries: dict, metric: str):
    top = runs.iloc[:MAX_BARS]
    corpora = sorted({corpus for r in top.run_id for corpus in summaries[r][metric]["per_corpus"]})
    grid = np.array([[summaries[r][metric]["per_corpus"].get(c, np.nan) for c in corpora] for r in top.run_id])
    figure, axes = _figure(height=0.35 * len(top) + 1.5, width=max(6.0, 1.1 * len(corpora) + 4))
    image = axes.imshow(grid, aspect="auto", cmap="viridis")
    axes.set_xticks(range(len(corpora)), corpora, rotation=30, ha="right", fontsize=8)
    axes.set_yticks(range(len(top)), [_short(name) for name in top.label], fontsize=8)
    for (row, column), value in np.ndenumerate(grid):
        axes.text(column, row, f"{value:.3f}", ha="center", va="center", fontsize=6, color="white")
    figure.colorbar(image, ax=axes, label=metric)
    return figure


def _figure(height: float, width: float = 9.0):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(width, height))
    return figure, axes


def _image(figure) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=90)
    plt.close(figure)
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}">'


def _image_or_note(figure, note: str) -> str:
    return _image(figure) if figure is not None else f"<p><i>{html.escape(note)}.</i></p>"


def _table_html(table: pd.DataFrame) -> str:
    """A table that scrolls within the page's width rather than widen the page."""
    return f'<div class="scroll">{table.to_html(index=False, border=0, classes="ranking", na_rep="")}</div>'



def _artifact(tracker: MlflowTracker, run_id: str, name: str, folder: str) -> Path:
    return Path(tracker.client().download_artifacts(run_id, name, tempfile.mkdtemp(dir=folder)))


def _short(text: str, width: int = 60) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


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
