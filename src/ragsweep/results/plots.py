"""The report's figures: matplotlib (Agg, no display) drawn to PNGs inlined as data URIs.

Inlined, so the one HTML file can be mailed, attached to a run or opened offline. Each function takes the
ranked runs and returns a figure, or None when the runs give it nothing to draw.
"""

from __future__ import annotations

import base64
import html
import io
import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ragsweep.metrics import registry
from ragsweep.metrics.pareto import non_dominated
from ragsweep.metrics.registry import Direction
from ragsweep.identity import NON_RESULT_KEYS
from ragsweep.tracking.runs import has_generator
from ragsweep.tracking.table import metric_names, param, param_keys

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# end to end per question (search + rerank + generation; without a generator, search + rerank), the
# median: steadier than p95 on few questions
LATENCY = "latency_ms_p50"
MAX_BARS = 25  # configs drawn in bar charts and the heatmap; the table lists them all
K = param("k")
# k, and the params that say where results go rather than what was computed: ignored when grouping k-curves.
_NOT_RESULT_PARAM = re.compile(rf"^(k|{'|'.join(sorted(NON_RESULT_KEYS))})(\.|$)")


def bars(runs: pd.DataFrame, summaries: dict, metric: str) -> Figure:
    """The first MAX_BARS configurations' means of `metric`, best at the top, with their 95% bootstrap CIs."""
    top = runs.iloc[:MAX_BARS]
    means = np.array([summaries[r][metric]["mean"] for r in top.run_id])
    lows = means - np.array([summaries[r][metric]["ci95"][0] for r in top.run_id])
    highs = np.array([summaries[r][metric]["ci95"][1] for r in top.run_id]) - means
    figure, axes = new_figure(height=0.35 * len(top) + 1.2)
    positions = np.arange(len(top))[::-1]
    axes.barh(positions, means, xerr=[lows, highs], color="#4C72B0", ecolor="#333", capsize=2)
    axes.set_yticks(positions, [_short(name) for name in top.label], fontsize=8)
    axes.set_xlabel(metric)
    return figure


def k_curves(runs: pd.DataFrame, metric: str) -> Figure | None:
    """`metric` against k, one curve per configuration run at several k (the best 10); None when there is none."""
    if K not in runs:
        return None
    keys = [key for key in param_keys(runs) if not _NOT_RESULT_PARAM.match(key)]
    groups = [(group, frame) for group, frame in runs.groupby([param(key) for key in keys], dropna=False)
              if frame[K].nunique() > 1]
    if not groups:
        return None
    groups.sort(key=lambda item: -item[1][metric].max())
    frames = [frame for _, frame in groups[:10]]
    figure, axes = new_figure(height=4.5)
    for frame, label in zip(frames, curve_labels(frames, keys), strict=True):
        frame = frame.assign(k=frame[K].astype(int)).sort_values("k")
        axes.plot(frame["k"], frame[metric], marker="o", label=_short(label))
    axes.set_xlabel("k")
    axes.set_ylabel(metric)
    axes.legend(fontsize=7)
    return figure


def curve_labels(frames: list[pd.DataFrame], keys: list[str]) -> list[str]:
    """Each curve named by the settings that tell it from the other curves (`chunker=recursive`), not by its runs'
    label, which names only the overrides a run was given and so leaves a default option unnamed. Group options
    first; their settings (`chunker.size`) too when the options alone do not tell two curves apart. `keys`: the
    params the curves are grouped by."""
    firsts = [frame.iloc[0] for frame in frames]
    varying = [key for key in keys if len({str(row.get(param(key))) for row in firsts}) > 1
               and not key.endswith("_target_")]
    options = [key for key in varying if "." not in key]

    def named(shown: list[str]) -> list[str]:
        return [",".join(f"{key}={row.get(param(key))}" for key in shown) or "defaults" for row in firsts]

    labels = named(options)
    return labels if len(set(labels)) == len(labels) else named(options + [k for k in varying if k not in options])


def pareto(runs: pd.DataFrame, metric: str) -> Figure | None:
    """`metric` against median latency, with the Pareto front of the runs with and of those without a generator;
    None when no run recorded its latency."""
    if LATENCY not in metric_names(runs) or runs[LATENCY].isna().all():
        return None
    points = runs.assign(generated=has_generator(runs))[["label", "generated", LATENCY, metric]].dropna()
    if points.empty:
        return None
    figure, axes = new_figure(height=4.5)
    for generated, group in points.groupby("generated"):  # one front per group: their latencies add up other stages
        latency, quality = group[LATENCY].to_numpy(), group[metric].to_numpy()
        front = pareto_front(latency, quality, registry.metric(metric).direction)
        marker, name = ("^", "with a generator: search + rerank + generation") if generated else (
            "o", "retrieval only: search + rerank")
        axes.scatter(latency, quality, color="#999", s=18, marker=marker, label=name)
        order = np.argsort(latency[front])
        axes.plot(latency[front][order], quality[front][order], color="#C44E52", marker=marker)
    label_points(axes, points[LATENCY].to_numpy(), points[metric].to_numpy(),
                 [str(rank + 1) for rank in points.index])
    axes.set_title("each point numbered by its rank in the ranking table", fontsize=8)
    axes.set_xlabel("end-to-end ms per question (p50, the median)")
    axes.set_ylabel(metric)
    axes.legend(fontsize=7)
    return figure


_OFFSETS = ((4, 4), (4, -11), (-4, 4), (-4, -11), (4, 14), (-4, 14), (4, -21), (-4, -21), (14, -4), (-14, -4))


def label_points(axes: Axes, x: np.ndarray, y: np.ndarray, names: list[str]) -> None:
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


def pareto_front(cost: np.ndarray, quality: np.ndarray, quality_direction: Direction = "maximize") -> np.ndarray:
    """True where no other point is at least as cheap and as good, and strictly better in one: the front of
    `best --pareto` (`metrics.pareto.non_dominated`), with latency's direction from the registry."""
    return non_dominated(np.column_stack([cost, quality]), (registry.metric(LATENCY).direction,
                                                            quality_direction))


def heatmap(runs: pd.DataFrame, summaries: dict, metric: str) -> Figure:
    """`metric` per corpus (columns) of the first MAX_BARS configurations (rows)."""
    top = runs.iloc[:MAX_BARS]
    corpora = sorted({corpus for r in top.run_id for corpus in summaries[r][metric]["per_corpus"]})
    grid = np.array([[summaries[r][metric]["per_corpus"].get(c, np.nan) for c in corpora] for r in top.run_id])
    figure, axes = new_figure(height=0.35 * len(top) + 1.5, width=max(6.0, 1.1 * len(corpora) + 4))
    image = axes.imshow(grid, aspect="auto", cmap="viridis")
    axes.set_xticks(range(len(corpora)), corpora, rotation=30, ha="right", fontsize=8)
    axes.set_yticks(range(len(top)), [_short(name) for name in top.label], fontsize=8)
    for (row, column), value in np.ndenumerate(grid):
        axes.text(column, row, f"{value:.3f}", ha="center", va="center", fontsize=6, color="white")
    figure.colorbar(image, ax=axes, label=metric)
    return figure


def effects_chart(table: pd.DataFrame, metric: str) -> Figure | None:
    """Each factor level's effect on `metric` (results.effects) with its 95% interval, grouped by factor, main
    effects first; None when nothing could be estimated."""
    table = table[table["kind"] != "not separable"]
    if table.empty:
        return None
    figure, axes = new_figure(height=0.28 * len(table) + 1.4)
    positions = np.arange(len(table))[::-1]
    colors = ["#4C72B0" if kind == "main" else "#DD8452" for kind in table["kind"]]
    # a percentile interval need not contain its point estimate (a skewed resample): bars never negative
    errors = np.clip([table["effect"] - table["low"], table["high"] - table["effect"]], 0, None)
    axes.errorbar(table["effect"], positions, xerr=errors, fmt="none", ecolor="#333", capsize=2)
    axes.scatter(table["effect"], positions, color=colors, zorder=3)
    axes.axvline(0, color="#999", linewidth=0.8)
    axes.set_yticks(positions, [_short(f"{factor}={level}") for factor, level in zip(table["factor"], table["level"])],
                    fontsize=8)
    axes.set_xlabel(f"effect on {metric} (difference from the grand mean; interactions in orange)")
    return figure


def new_figure(height: float, width: float = 9.0) -> tuple[Figure, Axes]:
    """A figure of `width` x `height` inches with one axes, drawn off screen (Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(width, height))
    return figure, axes


def img_tag(figure: Figure) -> str:
    """The figure as an <img> whose PNG is inlined, and closed."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=90)
    plt.close(figure)
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}">'


def img_or_note(figure: Figure | None, note: str) -> str:
    """The figure's <img>, or `note` in italics when there is no figure."""
    return img_tag(figure) if figure is not None else f"<p><i>{html.escape(note)}.</i></p>"


def _short(text: str, width: int = 60) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"
