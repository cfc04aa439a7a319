"""The 95% intervals of a scaled job's figures and the sweep's: bootstrap draws of the questions whose held calls
scale it (`drawn_ratios`), widened for the questions not asked (`_widening`), each draw's figures moved linearly
from what the scaled calls take and cost at ratio 1 (`moved_by_draws`), and their percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from ragsweep.metrics.costs import Call
from ragsweep.runner.build import Pipeline
from ragsweep.runner.estimating.calls import Planned
from ragsweep.runner.estimating.estimates import JobEstimate
from ragsweep.runner.estimating.prediction import Rates, Scaled, took_and_predicted
from ragsweep.runner.estimating.pricing import priced_models

INTERVAL_DRAWS = 1000  # bootstrap draws of the questions whose calls scale an estimate (`drawn_ratios`)
INTERVALS = ("prompt_tokens", "completion_tokens", "cost_total")  # a scaled job's figures given a 95% interval


def moved_by_draws(scaled: dict[tuple[str, int], Scaled], pipelines: Sequence[Pipeline],
                   planned: Sequence[Sequence[Planned]], jobs: Sequence[JobEstimate],
                   owner: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """How far each of `INTERVAL_DRAWS` bootstrap draws of the held calls' questions moves each job's `INTERVALS`
    (draws x jobs x figures) and the sweep's new cost (draws; a missing call counts in the job that `owner` names):
    the ratios' change times what the scaled calls take and cost at ratio 1."""
    questions = 1 + max(call.question or 0 for calls in planned for call in calls)
    weights = np.random.default_rng(0).poisson(1.0, (INTERVAL_DRAWS, questions)).astype(float)
    moved, moved_new = np.zeros((INTERVAL_DRAWS, len(jobs), len(INTERVALS))), np.zeros(INTERVAL_DRAWS)
    for (group, position), scaling in scaled.items():
        calls = [call for call in planned[position] if call.held is None and call.group == group]
        figures, costs = _at_ratio_one(pipelines[position], calls, scaling.rates)
        change = drawn_ratios(scaling, weights, jobs[position].questions) - np.array(scaling.ratios)
        moved[:, position] += np.column_stack([change[:, :2] * figures[:, :2].sum(axis=0),
                                               change @ costs.sum(axis=0)])
        moved_new += change @ costs[[owner[call.key] == position for call in calls]].sum(axis=0)
    return moved, moved_new


def drawn_ratios(scaled: Scaled, weights: np.ndarray, questions: int) -> np.ndarray:
    """The ratios (draws x figures) over bootstrap draws of the own calls' questions (`weights`: each draw's
    weight of each question position, Poisson(1), so a question's calls count alike in every job, as a sample
    asks the same questions of each), each draw's departure from `ratios` widened (`_widening`)."""
    took, predicted = took_and_predicted(scaled.rates, scaled.own)
    asked = [seen.question or 0 for seen in scaled.own]
    took_by, predicted_by = np.zeros((weights.shape[1], 3)), np.zeros((weights.shape[1], 3))  # a question's sums
    np.add.at(took_by, asked, took)
    np.add.at(predicted_by, asked, predicted)
    taking, predicting = weights @ took_by, weights @ predicted_by
    ratios = np.array(scaled.ratios)
    drawn = np.divide(taking, predicting, out=np.tile(ratios, (len(weights), 1)), where=predicting > 0)
    held = len({seen.question for seen in scaled.own})
    return ratios + (drawn - ratios) * _widening(held, questions)


def _widening(held: int, questions: int) -> float:
    """How much wider than the bootstrap's spread a sample of `held` of a job's `questions` questions leaves its
    total: sqrt(N / (N - n)), as the questions still to ask vary about the ratio as the held ones did, beside the
    ratio's own error (the ratio estimator's variance with its finite population correction, Cochran, Sampling
    Techniques, 6.9); sqrt(n / (n - 1)) for the bootstrap's variance of a mean, which divides by n; and Student's t
    over the normal quantile for a variance estimated from n values."""
    if held < 2:
        return 1.0
    population = math.sqrt(questions / (questions - held)) if questions > held else 1.0
    return population * math.sqrt(held / (held - 1)) * stats.t.ppf(0.975, held - 1) / stats.norm.ppf(0.975)


def _at_ratio_one(pipeline: Pipeline, calls: Sequence[Planned], rates: Rates) -> tuple[np.ndarray, np.ndarray]:
    """Each call's prompt tokens, completion tokens and milliseconds as `rates` predict them, and what each of the
    three costs (calls x 3 both): at each ratio 1 (a prediction's figures are these times the ratios)."""
    models = priced_models(pipeline)
    figures = np.array([rates.predict(call.characters, call.question, call.calls) for call in calls],
                       dtype=float).reshape(len(calls), 3)
    costs = []
    for call, (prompt, completion, milliseconds) in zip(calls, figures):
        model, remote = models[call.stage]
        costs.append([pipeline.prices.of(Call(model, remote, *priced)) for priced in
                      ((prompt, 0, 0.0), (0, completion, 0.0), (0, 0, milliseconds / 1000))])
    return figures, np.array(costs, dtype=float).reshape(len(calls), 3)


def percentiles(values: Sequence[float]) -> tuple[float, float]:
    """The 95% interval of the draws' values: their 2.5th and 97.5th percentiles."""
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)
