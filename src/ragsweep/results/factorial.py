"""Which swept setting moved a metric, and by how much: main effects and two-way interactions with 95% intervals.

Every configuration of a sweep is scored on the same questions, so the question is a block (a randomized
complete block design; Montgomery, Design and Analysis of Experiments, 9th ed. 2017, ch. 4 and 5):

    y[q, c] = mu + b_q + sum_F a_F[l_F(c)] + sum_{F<G} ab_FG[l_F(c), l_G(c)] + e[q, c]

with y[q, c] the metric of configuration c on question q, b_q the question's intercept and l_F(c) the level of
factor F (a swept setting: `chunker`, `k`, `retriever`, ...) in configuration c. Effects are sum-to-zero: the
main effect of level l of F is the marginal mean of the configurations with F = l minus the grand mean, and the
interaction of (a, b) is cell(a, b) - mean_a - mean_b + grand, marginal over the other factors. They are
estimated by least squares on the configurations' means over the questions (b_q is the same in every mean, so it
cancels from every contrast) with effect coding, which on a full factorial equals those marginal-mean contrasts.
The estimator is linear in the configuration means, `effects = E @ means`, so its 95% interval comes from a paired
(block) bootstrap over questions: resample whole questions, the same resample for every configuration, and take
the 2.5 and 97.5 percentiles of `E @ resampled means` (Efron & Tibshirani, An Introduction to the Bootstrap,
1993, ch. 13; Davison & Hinkley, Bootstrap Methods and their Application, 1997, sec. 3.8).

Only the questions every configuration has a value for are used (a race's stopped configurations ran fewer; an
answer metric is missing where generation failed). A term whose effect-coded columns lie in the span of the
others' (a factor never crossed with another, as when an Optuna sweep changed k and chunker together) cannot be
estimated and is reported as such; an interaction is modelled only for a pair whose level combinations all ran."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd


SAMPLES = 2000  # bootstrap resamples


CROSS = "×"


COLUMNS = ("factor", "level", "effect", "low", "high", "questions", "kind", "note")


@dataclass(frozen=True)
class Term:
    """One model term: a factor's main effect or a pair's interaction."""

    factors: tuple[str, ...]
    columns: np.ndarray  # configurations x coefficients, effect coded
    expand: np.ndarray  # per-level (per-cell) effects = expand @ coefficients
    levels: tuple[str, ...]  # the level (cell) each row of `expand` is

    @property
    def name(self) -> str:
        return CROSS.join(self.factors)


@dataclass(frozen=True)
class Effects:
    """The estimated effects of one metric across the configurations of a sweep."""

    table: pd.DataFrame  # every main effect, the interactions whose interval excludes 0, what cannot be separated
    interactions: pd.DataFrame  # every estimated interaction cell, shown in `table` or not
    unseparated: dict[str, list[str]]  # term -> the terms it cannot be separated from
    uncrossed: list[str]  # pairs whose level combinations did not all run: no interaction modelled
    questions: int
    configurations: int
    samples: int

    def model_line(self) -> str:
        """The model and how it was estimated, in one line."""
        return (f"model: y[q,c] = mu + b_q + main effects + two-way interactions + e; effects are least-squares "
                f"contrasts (sum to zero) of the {self.configurations} configurations' means over the "
                f"{self.questions} questions they all have; 95% intervals: {self.samples} paired bootstrap "
                "resamples of those questions")

    def notes(self) -> list[str]:
        """What the table leaves out: interactions within noise, pairs not crossed."""
        shown = sorted(set(self.table.loc[self.table.kind == "interaction", "factor"]))
        estimated = sorted(set(self.interactions.factor))
        quiet = [name for name in estimated if name not in shown]
        lines = []
        if estimated:
            lines.append(f"two-way interactions estimated: {len(estimated)}; shown (an interval excludes 0): "
                         f"{', '.join(shown) or 'none'}; within noise (every interval includes 0): "
                         f"{', '.join(quiet) or 'none'}")
        if self.uncrossed:
            lines.append(f"no interaction for {', '.join(self.uncrossed)}: not every combination of their levels ran")
        lost = [f"{name} (from {', '.join(others)})" for name, others in self.unseparated.items() if CROSS in name]
        if lost:
            lines.append(f"interactions that cannot be separated: {'; '.join(lost)}")
        return lines


def estimate(scores: np.ndarray, levels: pd.DataFrame, samples: int = SAMPLES, seed: int = 0) -> Effects:
    """Main effects and two-way interactions of the factors in `levels` on `scores`, with 95% intervals.

    Args:
        scores: questions x configurations; NaN where a configuration has no value for a question.
        levels: one row per configuration (in the order of `scores`' columns), one column per setting, the level
            as text. A column with one level is not a factor.
        samples: bootstrap resamples of the questions.
        seed: seeds `numpy.random.default_rng`.

    Raises:
        ValueError: fewer than two configurations, no factor, or no question every configuration has.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2 or scores.shape[1] != len(levels):
        raise ValueError(f"scores are {scores.shape}, levels have {len(levels)} configurations")
    if scores.shape[1] < 2:
        raise ValueError("one configuration: nothing to compare")
    factors = [name for name in levels.columns if levels[name].nunique() > 1]
    if not factors:
        raise ValueError("the configurations differ in no setting")
    y = scores[np.isfinite(scores).all(axis=1)]
    if not len(y):
        raise ValueError("no question has a value in every configuration")
    terms, uncrossed = _terms(levels.astype(str).reset_index(drop=True), factors)
    design = np.hstack([np.ones((len(levels), 1)), *(term.columns for term in terms)])
    unseparated = _unseparated(design, terms)
    solve = np.linalg.pinv(design)  # a least-squares solution; estimable contrasts do not depend on which
    rows, blocks, start = [], [], 1
    for term in terms:
        width = term.columns.shape[1]
        if term.name not in unseparated:
            blocks.append(term.expand @ solve[start:start + width])
            rows += [(term, level) for level in term.levels]
        start += width
    transform = np.vstack(blocks) if blocks else np.zeros((0, len(levels)))
    point = transform @ y.mean(axis=0)
    resampled = _resampled_means(y, samples, seed) @ transform.T
    low, high = np.quantile(resampled, [0.025, 0.975], axis=0) if len(rows) else (point, point)
    every = pd.DataFrame({"factor": [t.name for t, _ in rows], "level": [lvl for _, lvl in rows], "effect": point,
                          "low": low, "high": high, "questions": len(y),
                          "kind": ["interaction" if len(t.factors) > 1 else "main" for t, _ in rows], "note": ""})
    return Effects(_table(every, unseparated, factors, len(y)), every[every.kind == "interaction"].reset_index(
        drop=True), unseparated, uncrossed, len(y), len(levels), samples)


def _resampled_means(y: np.ndarray, samples: int, seed: int) -> np.ndarray:
    """samples x configurations: each configuration's mean over the same resample of whole questions."""
    n = len(y)
    drawn = np.random.default_rng(seed).integers(0, n, size=(samples, n))
    counts = np.bincount((drawn + n * np.arange(samples)[:, None]).ravel(), minlength=samples * n)
    return counts.reshape(samples, n) @ y / n


def _table(every: pd.DataFrame, unseparated: dict[str, list[str]], factors: list[str], questions: int) -> pd.DataFrame:
    """Main effects, the interactions with a cell whose interval excludes 0, then the factors not separable."""
    scale = max(1e-12, float(every.effect.abs().max()) * 1e-9) if len(every) else 1e-12
    excludes = (every.low > scale) | (every.high < -scale)
    matters = set(every.factor[(every.kind == "interaction") & excludes])
    shown = every[(every.kind == "main") | every.factor.isin(matters)]
    lost = [{"factor": name, "level": "", "effect": np.nan, "low": np.nan, "high": np.nan, "questions": questions,
             "kind": "not separable", "note": f"cannot be separated from {', '.join(unseparated[name])}"}
            for name in factors if name in unseparated]
    return pd.DataFrame(shown.to_dict("records") + lost, columns=list(COLUMNS))


def _terms(levels: pd.DataFrame, factors: list[str]) -> tuple[list[Term], list[str]]:
    """Each factor's main-effect term, then each pair's interaction term where all level combinations ran."""
    coded = {}
    for name in factors:
        order = _ordered(levels[name])
        coding = np.vstack([np.eye(len(order) - 1), -np.ones((1, len(order) - 1))])  # sum-to-zero
        coded[name] = (order, coding, levels[name].map({lvl: i for i, lvl in enumerate(order)}).to_numpy())
    terms = [Term((name,), coding[codes], coding, tuple(order)) for name, (order, coding, codes) in coded.items()]
    uncrossed = []
    for a, b in combinations(factors, 2):
        (order_a, coding_a, codes_a), (order_b, coding_b, codes_b) = coded[a], coded[b]
        if len(set(zip(codes_a, codes_b))) < len(order_a) * len(order_b):
            uncrossed.append(f"{a}{CROSS}{b}")
            continue
        columns = np.einsum("ci,cj->cij", coding_a[codes_a], coding_b[codes_b]).reshape(len(levels), -1)
        cells = tuple(f"{x}{CROSS}{y}" for x in order_a for y in order_b)
        terms.append(Term((a, b), columns, np.kron(coding_a, coding_b), cells))
    return terms, uncrossed


def _unseparated(design: np.ndarray, terms: list[Term]) -> dict[str, list[str]]:
    """Term -> the terms it cannot be separated from, for each term whose columns are not independent of the rest
    (its coefficients are then not estimable). Named are the terms it is confounded with on their own, else all."""
    rank = np.linalg.matrix_rank(design)
    spans, start = {}, 1
    for term in terms:
        spans[term.name] = (start, start + term.columns.shape[1])
        start = spans[term.name][1]
    lost = {}
    for term in terms:
        begin, end = spans[term.name]
        if rank - np.linalg.matrix_rank(np.delete(design, np.s_[begin:end], axis=1)) == end - begin:
            continue
        pairs = [other.name for other in terms if other is not term and _confounded(term, other)]
        lost[term.name] = pairs or [other.name for other in terms if other is not term]
    return lost


def _confounded(term: Term, other: Term) -> bool:
    together = np.hstack([np.ones((len(term.columns), 1)), term.columns, other.columns])
    return np.linalg.matrix_rank(together) < together.shape[1]


def _ordered(values: pd.Series) -> list[str]:
    """A factor's levels in order: numerically when all are numbers (k: 1, 3, 10), else alphabetically."""
    distinct = sorted(set(values))
    try:
        return sorted(distinct, key=float)
    except ValueError:
        return distinct
