"""results.effects: main effects and interactions across a grid, on synthetic sweeps whose effects are known."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from ragsweep.results.effects import swept_levels
from ragsweep.results.factorial import estimate
from ragsweep.tracking.table import param

# chunker (2) x k (3) x retriever (2): sum-to-zero main effects, one chunker x k interaction, no other
MAIN = {"chunker": {"fixed": -0.05, "recursive": 0.05}, "k": {"1": -0.07, "3": 0.02, "5": 0.05},
        "retriever": {"bm25": 0.03, "dense": -0.03}}
CHUNKER_K = {("fixed", "1"): 0.04, ("fixed", "3"): -0.02, ("fixed", "5"): -0.02,  # rows and columns sum to 0
             ("recursive", "1"): -0.04, ("recursive", "3"): 0.02, ("recursive", "5"): 0.02}
GRID = pd.DataFrame(list(itertools.product(*(list(levels) for levels in MAIN.values()))), columns=list(MAIN))


def _truth(factor: str, level: str) -> float:
    if factor == "chunker×k":
        return CHUNKER_K[tuple(level.split("×"))]
    if "×" in factor:
        return 0.0
    return MAIN[factor][level]


def _cells(grid: pd.DataFrame) -> np.ndarray:
    """Each configuration's true mean: 0.5 plus its main effects and its chunker x k interaction."""
    return np.array([0.5 + sum(MAIN[f][getattr(row, f)] for f in MAIN) + CHUNKER_K[(row.chunker, row.k)]
                     for row in grid.itertuples()])


def _simulations(count: int, questions: int = 200, seed: int = 1) -> np.ndarray:
    """count x questions x configurations: the cell means, a question intercept b_q ~ N(0, 0.3) shared by every
    configuration, and noise ~ N(0, 0.1)."""
    rng = np.random.default_rng(seed)
    block = rng.normal(0, 0.3, size=(count, questions, 1))
    return _cells(GRID) + block + rng.normal(0, 0.1, size=(count, questions, len(GRID)))


def test_the_intervals_cover_the_true_effects_and_are_narrow_enough_to_find_them():
    runs = [estimate(scores, GRID, samples=1000, seed=i) for i, scores in enumerate(_simulations(200))]
    every = pd.concat([pd.concat([found.table[found.table.kind == "main"], found.interactions]).assign(sim=i)
                       for i, found in enumerate(runs)], ignore_index=True)
    every["truth"] = [_truth(f, lvl) for f, lvl in zip(every.factor, every.level)]
    covered = ((every.low <= every.truth) & (every.truth <= every.high)).groupby([every.factor, every.level]).mean()
    assert len(covered) == 7 + 6 + 4 + 6  # 7 main levels; chunker x k, chunker x retriever, k x retriever cells
    assert covered.min() >= 0.9, covered[covered < 0.9]
    assert 0.93 <= covered.mean() <= 0.97, covered.mean()
    real = every[every.truth != 0]
    assert ((real.low > 0) | (real.high < 0)).mean() >= 0.99  # every real effect found, nearly always
    assert (every.high - every.low).max() < 0.03  # an interval that always covers would be wide
    shown = pd.Series([set(found.table.factor[found.table.kind == "interaction"]) for found in runs])
    assert shown.map(lambda names: "chunker×k" in names).mean() >= 0.95
    for null in ("chunker×retriever", "k×retriever"):
        assert shown.map(lambda names: null in names).mean() <= 0.2, null  # within noise most of the time
    assert {found.questions for found in runs} == {200}


def test_a_full_factorial_gives_the_marginal_mean_contrasts_by_hand():
    """Cells (fixed,3)=0.2, (fixed,5)=0.4, (recursive,3)=0.3, (recursive,5)=0.7, grand mean 0.4. chunker: fixed
    (0.2+0.4)/2 - 0.4 = -0.1; k: 3 (0.2+0.3)/2 - 0.4 = -0.15; fixed x 3: 0.2 - 0.3 - 0.25 + 0.4 = +0.05."""
    levels = pd.DataFrame({"chunker": ["fixed", "fixed", "recursive", "recursive"], "k": ["3", "5", "3", "5"],
                           "store": "numpy"})  # one level: not a factor
    block = np.random.default_rng(0).normal(0, 0.3, size=(30, 1))
    scores = np.array([0.2, 0.4, 0.3, 0.7]) + block  # the question intercept cancels from every contrast
    found = estimate(scores, levels, samples=200)
    effects = dict(zip(found.table.factor + "=" + found.table.level, found.table.effect.round(6)))
    assert effects == {"chunker=fixed": -0.1, "chunker=recursive": 0.1, "k=3": -0.15, "k=5": 0.15,
                       "chunker×k=fixed×3": 0.05, "chunker×k=fixed×5": -0.05, "chunker×k=recursive×3": -0.05,
                       "chunker×k=recursive×5": 0.05}
    assert np.allclose(found.table.low, found.table.effect) and np.allclose(found.table.high, found.table.effect)
    assert set(found.table.kind) == {"main", "interaction"} and set(found.table.questions) == {30}


def test_k_levels_are_ordered_as_numbers():
    levels = pd.DataFrame({"k": ["10", "3", "5"]})
    found = estimate(np.array([[0.1, 0.2, 0.3]] * 5), levels, samples=100)
    assert list(found.table.level) == ["3", "5", "10"]


def test_factors_that_changed_together_cannot_be_separated():
    """An Optuna-like sweep: k was 3 whenever the chunker was fixed and 5 when it was recursive; the retriever was
    crossed with both, so its effect (bm25 +0.03) is estimated and theirs are not."""
    levels = pd.DataFrame({"chunker": ["fixed", "fixed", "recursive", "recursive"], "k": ["3", "3", "5", "5"],
                           "retriever": ["bm25", "dense", "bm25", "dense"]})
    rng = np.random.default_rng(2)
    scores = np.array([0.33, 0.27, 0.43, 0.37]) + rng.normal(0, 0.3, (100, 1)) + rng.normal(0, 0.05, (100, 4))
    found = estimate(scores, levels)
    table = found.table.set_index(["factor", "level"])
    assert table.loc[("chunker", ""), "note"] == "cannot be separated from k"
    assert table.loc[("k", ""), "note"] == "cannot be separated from chunker"
    assert table.loc[("chunker", ""), "kind"] == "not separable" and np.isnan(table.loc[("k", ""), "effect"])
    bm25 = table.loc[("retriever", "bm25")]
    assert bm25.kind == "main" and bm25.low < 0.03 < bm25.high and bm25.low > 0
    assert "chunker×k" in found.uncrossed
    assert any("chunker×retriever (from k×retriever)" in note for note in found.notes())


def test_a_race_uses_the_questions_every_configuration_ran():
    """Configuration 2 was stopped after 28 of 40 questions and configuration 3 has no value for question 0 (its
    generation failed): questions 1..27 are used, and what the others scored on the rest does not count."""
    levels = pd.DataFrame({"chunker": ["fixed", "fixed", "recursive", "recursive"], "k": ["3", "5", "3", "5"]})
    scores = np.tile([0.2, 0.4, 0.3, 0.7], (40, 1))
    scores[28:, 2], scores[0, 3] = np.nan, np.nan
    scores[28:, [0, 1, 3]], scores[0, [0, 1, 2]] = 9.0, 9.0  # would move every effect if it were used
    found = estimate(scores, levels, samples=100)
    assert found.questions == 27 and set(found.table.questions) == {27}
    effects = dict(zip(found.table.factor + "=" + found.table.level, found.table.effect.round(6)))
    assert effects["chunker=fixed"] == -0.1 and effects["k=5"] == 0.15


@pytest.mark.parametrize(("scores", "levels", "message"), [
    (np.ones((3, 1)), pd.DataFrame({"k": ["3"]}), "one configuration"),
    (np.ones((3, 2)), pd.DataFrame({"k": ["3", "3"]}), "differ in no setting"),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), pd.DataFrame({"k": ["3", "5"]}), "no question has a value in every"),
])
def test_nothing_to_estimate_is_refused(scores, levels, message):
    with pytest.raises(ValueError, match=message):
        estimate(scores, levels)


def test_the_levels_are_the_settings_the_labels_name_read_from_the_params():
    labels = pd.Series(["chunker=fixed,k=3", "chunker=recursive,k=10", "retriever.weights=[0.3,0.7],k=3"])
    params = pd.DataFrame({param("chunker"): ["fixed", "recursive", "recursive"], param("k"): ["3", "10", "3"]})
    levels = swept_levels(labels, params)
    assert levels.to_dict("list") == {"chunker": ["fixed", "recursive", "recursive"], "k": ["3", "10", "3"],
                                      "retriever.weights": ["default", "default", "[0.3,0.7]"]}


def test_small_effects_keep_three_significant_digits():
    """A cost of $0.000012 a question is not printed as +0.0000; quality metrics keep four places."""
    from ragsweep.results.effects import decimals

    assert decimals([0.0277, -0.0331]) == 4 and decimals([0.5, 1.0]) == 4
    assert decimals([2.7e-6, -1.1e-6]) == 8 and f"{2.7e-6:+.{decimals([2.7e-6])}f}" == "+0.00000270"
    assert decimals([float("nan"), 0.0]) == 4
