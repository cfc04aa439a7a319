from __future__ import annotations

import numpy as np
import pytest

from ragsweep.metrics.pareto import non_dominated


def _dominates(b: list[float], a: list[float], directions: list[str]) -> bool:
    """b is at least as good as a on every metric and strictly better on one, written out plainly."""
    as_good, better = True, False
    for x, y, direction in zip(b, a, directions):
        if direction == "maximize":
            as_good, better = as_good and x >= y, better or x > y
        else:
            as_good, better = as_good and x <= y, better or x < y
    return as_good and better


def _front_by_brute_force(points: list[list[float]], directions: list[str]) -> list[bool]:
    return [not any(_dominates(other, point, directions) for other in points) for point in points]


@pytest.mark.parametrize("seed", range(40))
def test_the_front_equals_a_plain_dominance_check_on_random_points_with_ties_and_duplicates(seed):
    rng = np.random.default_rng(seed)
    metrics = int(rng.integers(2, 4))
    n = int(rng.integers(1, 30))
    points = rng.integers(0, 5, size=(n, metrics)).astype(float)  # few levels: many ties
    points[rng.random(n) < 0.2] = points[0]  # and exact duplicates of one point
    directions = list(rng.choice(["maximize", "minimize"], size=metrics))
    expected = _front_by_brute_force(points.tolist(), directions)
    assert non_dominated(points, directions).tolist() == expected
    assert any(expected)  # a finite set always has a non-dominated point


def test_the_front_by_hand():
    # (quality, latency): (0.9, 30) and (0.5, 10) trade off; (0.5, 20) is beaten by (0.5, 10), which its
    # duplicate does not beat; (0.9, 40) is beaten by (0.9, 30)
    points = np.array([[0.9, 30.0], [0.5, 10.0], [0.5, 20.0], [0.5, 10.0], [0.9, 40.0]])
    assert non_dominated(points, ["maximize", "minimize"]).tolist() == [True, True, False, True, False]
    assert non_dominated(np.zeros((0, 2)), ["maximize", "minimize"]).tolist() == []


@pytest.mark.parametrize(("values", "directions", "message"), [
    ([[1.0, np.nan]], ["maximize", "minimize"], "NaN"),
    ([[1.0, 2.0]], ["maximize", "none"], "'maximize' or 'minimize'"),
    ([[1.0, 2.0]], ["maximize"], "points x 1 metrics"),
])
def test_refuses_what_has_no_front(values, directions, message):
    with pytest.raises(ValueError, match=message):
        non_dominated(np.array(values), directions)
