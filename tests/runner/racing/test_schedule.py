from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from ragsweep.runner.racing.schedule import Race, round_sizes

SCHEDULE = [0.1, 0.25, 0.5, 1.0]
QUESTIONS = 400
DELTA = 0.05


def _scores(means: list[float], races: int, claims: int, seed: int) -> np.ndarray:
    """(races, K, QUESTIONS) per-question values: the share of `claims` 0/1 claims supported, each claim
    supported with probability means[c], correlated across configurations (correlation 0.6 on the latent
    scale) through one difficulty per question, as real questions are hard or easy for every configuration."""
    rng = np.random.default_rng(seed)
    cut = np.array([NormalDist().inv_cdf(mean) for mean in means])[None, :, None, None]
    difficulty = rng.standard_normal((races, 1, QUESTIONS, 1))
    noise = rng.standard_normal((races, len(means), QUESTIONS, claims))
    return (0.6 * difficulty + 0.8 * noise < cut).mean(axis=-1)


def _race(values: np.ndarray, failed: np.ndarray, sign: float = 1.0, method: str = "betting") -> Race:
    """One race over `values` (K, QUESTIONS) on the schedule, failed questions given as NaN."""
    names = [f"c{index}" for index in range(len(values))]
    bounds = (0.0, 1.0) if sign > 0 else (-1.0, 0.0)
    race = Race(names, QUESTIONS, bounds, DELTA, maximize=sign > 0, method=method)
    answered = np.where(failed, np.nan, sign * values)
    for index, size in enumerate(round_sizes(SCHEDULE, QUESTIONS, 20)):
        race.update(index, {name: answered[row, :size] for row, name in enumerate(names)
                            if name in race.survivors})
        if len(race.survivors) == 1:
            break
    return race


@pytest.mark.parametrize("method", ["betting", "empirical_bernstein"])
@pytest.mark.parametrize(("means", "claims"), [([0.60, 0.58, 0.45, 0.35, 0.35], 1),
                                               ([0.52, 0.51, 0.50, 0.50, 0.49, 0.48], 5)])
def test_the_population_best_is_stopped_in_at_most_delta_of_races(means, claims, method):
    """1,000 races, 3% of answers failed at random; the rate must be <= delta + 0.02 (3 standard errors of a
    share of 1,000 near 0.05 is 0.021). With clear gaps, the 0.35 configurations must stop before the
    last round in >= 90% of races, so a race that never stops cannot pass."""
    races = 1000
    values = _scores(means, races, claims, seed=len(means))
    failed = np.random.default_rng(99).random(values.shape) < 0.03
    best_stopped, early = 0, []
    for row in range(races):
        race = _race(values[row], failed[row], method=method)
        population_means = values[row].mean(axis=1)
        best = {f"c{i}" for i in np.flatnonzero(population_means == population_means.max())}
        best_stopped += bool(best & set(race.stopped))
        early += [race.stopped[f"c{i}"].questions < QUESTIONS if f"c{i}" in race.stopped else False
                  for i, mean in enumerate(means) if mean == 0.35]
    assert best_stopped / races <= DELTA + 0.02
    if early:
        assert np.mean(early) >= 0.90


def test_betting_stops_the_clearly_worse_sooner_than_empirical_bernstein():
    """The point of the betting sequence: with the gaps of the first simulation, over 200 races the 0.45 and
    0.35 configurations run fewer questions on average (a stopped one ran its round's, a survivor all 400)."""
    values = _scores([0.60, 0.58, 0.45, 0.35, 0.35], 200, 1, seed=5)
    failed = np.zeros(values.shape, dtype=bool)
    ran = {}
    for method in ("betting", "empirical_bernstein"):
        races = [_race(values[row], failed[row], method=method) for row in range(200)]
        ran[method] = np.mean([race.stopped[c].questions if c in race.stopped else QUESTIONS
                               for race in races for c in ("c2", "c3", "c4")])
    assert ran["betting"] < 0.8 * ran["empirical_bernstein"], ran


def test_a_betting_elimination_reports_one_sided_bounds_around_the_difference():
    # B is 0.5 below A on each of 100 questions: the upper bound (one-sided at alpha = 0.05) is below 0 and the
    # lower one below -0.5; both lie within the logical bounds the 0 unseen questions leave, here exactly -0.5
    race = Race(["A", "B"], 100, (0, 1), DELTA)
    (stop,) = race.update(0, {"A": [1.0] * 100, "B": [0.5] * 100})
    assert stop.low == pytest.approx(-0.5) and stop.high == pytest.approx(-0.5)
    (early,) = Race(["A", "B"], 1000, (0, 1), DELTA).update(0, {"A": [1.0] * 100, "B": [0.5] * 100})
    assert -1 <= early.low < -0.5 < early.high < 0


def test_an_unknown_method_is_refused_in_one_line():
    with pytest.raises(ValueError, match="betting") as error:
        Race(["A", "B"], 100, (0, 1), DELTA, method="hoeffding")
    assert "\n" not in str(error.value)


def test_minimising_the_negated_scores_stops_the_same_configurations_at_the_same_points():
    values = _scores([0.60, 0.58, 0.45, 0.35], 30, 1, seed=5)
    failed = np.random.default_rng(6).random(values.shape) < 0.03
    for row in range(30):
        kept, negated = _race(values[row], failed[row]), _race(values[row], failed[row], sign=-1.0)
        assert negated.stopped == kept.stopped
        assert [r.leader for r in negated.history] == [r.leader for r in kept.history]


def test_failed_questions_are_left_out_of_the_pairs_and_counted():
    # A is right on all 100 questions but failed 0-4, B wrong on all but failed 3-9: 90 pairs, 10 left out.
    # Over all 100 questions the mean difference B - A is at most (90 * -1 + 10 * 1) / 100 = -0.8
    a = [None] * 5 + [1.0] * 95
    b = [0.0] * 3 + [None] * 7 + [0.0] * 90
    race = Race(["A", "B", "C"], 100, (0, 1), DELTA)
    (stop,) = race.update(0, {"A": a, "B": b, "C": [None] * 100})
    assert (stop.config, stop.leader, stop.round, stop.questions) == ("B", "A", 0, 100)
    assert (stop.pairs, stop.left_out, stop.difference) == (90, 10, -1.0)
    assert stop.high <= -0.8 + 1e-12
    assert race.survivors == ["A", "C"]  # C failed everywhere: no pair, nothing to stop it on
    assert race.history[-1].survivors == ("A", "C") and race.history[-1].stopped == ("B",)


def test_the_leader_is_the_best_mean_over_answered_questions_first_of_equals():
    race = Race(["A", "B", "C"], 10, (0, 1), DELTA)
    race.update(0, {"A": [0.5, 0.5], "B": [1.0, None], "C": [None, 1.0]})
    assert race.leader == "B"  # B and C both 1.0 over what they answered; B comes first
    assert race.stopped == {}


def test_round_sizes():
    assert round_sizes(SCHEDULE, 400, 20) == [40, 100, 200, 400]
    # 50 questions: ceil(5) and ceil(12.5) both rise to 20, one round kept; then 25 and 50
    assert round_sizes(SCHEDULE, 50, 20) == [20, 25, 50]
    assert round_sizes(SCHEDULE, 10, 20) == [10]


@pytest.mark.parametrize("shares", [[0.1, 0.5], [0.5, 0.25, 1.0], [0.0, 1.0], [0.5, 1.5, 1.0], []])
def test_bad_schedules_are_refused_in_one_line(shares):
    with pytest.raises(ValueError, match="racing.schedule") as error:
        round_sizes(shares, 400, 20)
    assert "\n" not in str(error.value)


def test_a_schedule_not_ending_at_all_questions_says_so():
    with pytest.raises(ValueError) as error:
        round_sizes([0.1, 0.5], 400, 20)
    assert str(error.value) == "racing.schedule must end at 1.0 (all questions), got [0.1, 0.5]"


@pytest.mark.parametrize(("configs", "delta", "bounds"), [
    (["A", "B"], 0.0, (0, 1)), (["A", "B"], 1.0, (0, 1)), (["A"], 0.05, (0, 1)), (["A", "A"], 0.05, (0, 1)),
    (["A", "B"], 0.05, (1, 0))])
def test_bad_races_are_refused_in_one_line(configs, delta, bounds):
    with pytest.raises(ValueError) as error:
        Race(configs, 100, bounds, delta)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("scores", [{"A": [0.5]}, {"A": [0.5], "B": [0.5, 0.5]}, {"A": [0.5], "B": [1.5]},
                                    {"A": [0.5], "B": [0.5], "Z": [0.5]}, {"A": [0.5] * 11, "B": [0.5] * 11}])
def test_bad_scores_are_refused_in_one_line(scores):
    with pytest.raises(ValueError) as error:
        Race(["A", "B"], 10, (0, 1), DELTA).update(0, scores)
    assert "\n" not in str(error.value)
