"""The bookkeeping of a race: which configurations survive each round, decided from per-question scores.

A race runs K configurations over the same seeded order of the N questions, in rounds of growing size
(`round_sizes`), and after each round stops the configurations an anytime-valid confidence sequence shows to
be worse than the current leader (`Race`). Pure: the runner feeds it scores and reads back who goes on.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragsweep.metrics.confidence_sequence import betting_bound, betting_excludes, confidence_sequence

log = logging.getLogger(__name__)
METHODS = ("betting", "empirical_bernstein")


def round_sizes(shares: Sequence[float], total: int, min_questions: int) -> list[int]:
    """Questions run after each round: ceil(share * total), at least `min_questions`, at most `total`,
    strictly increasing (rounds that would add nothing are dropped).

    Raises:
        ValueError: shares not strictly increasing in (0, 1], or the last one not 1.0.
    """
    shares = [float(share) for share in shares]
    if not shares or shares[-1] != 1.0:
        raise ValueError(f"racing.schedule must end at 1.0 (all questions), got {shares}")
    if any(not 0 < share <= 1 for share in shares) or any(a >= b for a, b in zip(shares, shares[1:])):
        raise ValueError(f"racing.schedule must be strictly increasing shares in (0, 1], got {shares}")
    if total < 1 or min_questions < 1:
        raise ValueError(f"a race needs total >= 1 and racing.min_questions >= 1, got {total=}, "
                         f"{min_questions=}")
    sizes: list[int] = []
    for share in shares:
        size = min(total, max(min_questions, math.ceil(share * total - 1e-9)))
        if not sizes or size > sizes[-1]:
            sizes.append(size)
    return sizes


GROWTH = 1.5  # a round grown from the question set runs this many times the questions before it
FIRST_SHARE = 0.1  # and its first round at least this share of them
EARLIEST_SEARCH = 200  # questions searched for the first at which a race could stop anything


def growing_sizes(first: int, total: int, growth: float = GROWTH) -> list[int]:
    """Questions run after each round when the schedule is left to the question set: `first` or `FIRST_SHARE`
    of the questions, whichever is more, then `growth` times the questions before, ending at `total` (a round
    that would leave the last one at most half the questions it adds itself takes them all). Each round adds
    at least half the questions of all rounds before it, so a configuration's fixed cost per round (launching
    its job, reopening its run, scoring what it has so far) is paid at most about log(1 / FIRST_SHARE) /
    log(growth) + 1 = 7 times, and never for a round smaller than `first`; the replay in
    docs/benchmarks/racing.md weighs it against fixed shares."""
    if total < 1 or first < 1 or growth <= 1:
        raise ValueError(f"a race needs total >= 1, a first round >= 1 and growth > 1, got {total=}, {first=}, "
                         f"{growth=}")
    sizes = [min(total, max(first, math.ceil(FIRST_SHARE * total - 1e-9)))]
    while sizes[-1] < total:
        following = max(sizes[-1] + 1, math.ceil(sizes[-1] * growth))
        added = following - sizes[-1]
        sizes.append(total if total - following <= added / 2 else following)
    return sizes


def first_round(configurations: int, delta: float, min_questions: int) -> int:
    """The first round of a schedule left to the question set: `min_questions`, or more when the race's sequence,
    at alpha = delta / (K - 1), could not stop any configuration sooner, not even one that scored the metric's
    worst on every question while the leader scored its best (about 6 questions for K = 2, 12 for K = 36)."""
    alpha = delta / max(1, configurations - 1)
    excluded = betting_excludes(-np.ones(EARLIEST_SEARCH), 0.0, alpha, (-1.0, 1.0), side="upper")
    earliest = int(np.argmax(excluded)) + 1 if excluded.any() else EARLIEST_SEARCH
    return max(min_questions, earliest)


@dataclass(frozen=True, slots=True)
class Elimination:
    """Why `config` stopped: the interval for its mean paired difference with `leader` (c - leader, or
    leader - c when minimising, so worse is negative) lay below 0 after `questions` questions of `round`."""

    config: str
    round: int
    questions: int
    leader: str
    difference: float
    low: float
    high: float
    pairs: int        # questions both answered, the differences the interval rests on
    left_out: int     # questions either failed, left out of the differences


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """One round for the parent run's report: its leader and who survived it."""

    round: int
    questions: int
    leader: str
    survivors: tuple[str, ...]
    stopped: tuple[str, ...]


class Race:
    """Stops configurations that are worse than the leader, with P(stopping the population-best) <= delta.

    After each round, every survivor c is compared with the leader L (the survivor with the best mean so far)
    on their paired per-question differences d = c - L (L - c when minimising, so worse is negative), by a
    confidence sequence for the mean of d over all N questions at alpha = delta / (K - 1). With the default
    method="betting" that is the one-sided betting sequence for an upper bound (metrics.confidence_sequence.
    betting_excludes, side="upper": capital K- >= 1/alpha, without replacement from N), and c stops once it
    excludes a mean difference of 0, hence (the exclusion being monotone) every mean >= 0. The race needs
    only that upper bound, and a one-sided sequence at alpha is narrower than a two-sided one, which would
    spend alpha/2 on a lower bound never used. method="empirical_bernstein" uses the two-sided
    `confidence_sequence` instead and stops c once its upper bound is below 0.

    The leader is chosen from the data, yet the guarantee holds: the sequence for a pair (b, c) is a function
    of that pair's differences alone and, for the population-best b (mean of b - c >= 0), excludes every
    mean >= 0 at some time with probability <= alpha, however often and whenever it is looked at. b stops
    only if that happens for its pair with some leader; b can meet at most K - 1 others, so a union bound
    gives at most (K - 1) alpha = delta.

    An `Elimination`'s `high` is that one-sided upper bound at alpha (<= 0), and its `low` the one-sided lower
    bound at alpha from the same betting sequence (side="lower"), so [low, high] together cover the mean
    difference at 1 - 2 alpha, not 1 - alpha. With method="empirical_bernstein", [low, high] is the two-sided
    interval at 1 - alpha.

    A failed question (None or NaN) leaves its pair out. If failures strike independently of the question,
    the pairs left are still a uniformly random draw without replacement from all N, so the population stays
    N and the target stays the mean over all N; questions that always fail make the target the mean over
    the others, for which N overstates the population a little.

    Args:
        configs: The K configurations, in the order that breaks ties for the leader.
        population: N, the questions a full race runs.
        bounds: (lo, hi) of one question's value for the metric raced on.
        delta: P(stopping the population-best) allowed over the whole race, in (0, 1).
        maximize: False for metrics where lower is better.
        method: "betting" (one-sided, as above) or "empirical_bernstein" (two-sided; wider early on, for
            comparison).
    """

    def __init__(self, configs: Sequence[str], population: int, bounds: tuple[float, float], delta: float,
                 maximize: bool = True, method: str = "betting") -> None:
        if not 0 < delta < 1:
            raise ValueError(f"racing.delta must be in (0, 1), e.g. 0.05; got {delta!r}")
        if len(configs) < 2 or len(set(configs)) != len(configs):
            raise ValueError(f"a race needs 2 or more distinct configurations, got {list(configs)}")
        if population < 1 or not bounds[0] < bounds[1]:
            raise ValueError(f"a race needs population >= 1 and bounds (lo, hi) with lo < hi, got "
                             f"{population=}, {bounds=}")
        if method not in METHODS:
            raise ValueError(f"a race's method must be one of {METHODS}, got {method!r}")
        self.configs, self.population, self.bounds = tuple(configs), int(population), bounds
        self.delta, self.maximize, self.method = float(delta), maximize, method
        self.alpha = self.delta / (len(self.configs) - 1)
        self._stopped: dict[str, Elimination] = {}
        self.withdrawn: set[str] = set()  # configurations whose job failed: out of the race, not compared
        self.history: list[RoundRecord] = []

    @property
    def survivors(self) -> list[str]:
        return [config for config in self.configs if config not in self._stopped and config not in self.withdrawn]

    def withdraw(self, config: str) -> None:
        """Take out a configuration whose job failed; the others race on (their alpha stays delta/(K-1))."""
        self.withdrawn.add(config)

    @property
    def stopped(self) -> dict[str, Elimination]:
        """Each stopped configuration's elimination, in the order they stopped."""
        return dict(self._stopped)

    @property
    def leader(self) -> str | None:
        """The leader after the last round, None before the first."""
        return self.history[-1].leader if self.history else None

    def update(self, round_index: int, scores: Mapping[str, Sequence[float | None]]) -> list[Elimination]:
        """Record one round: `scores[c]` holds survivor c's values over the first n questions in the seeded
        order (None or NaN where c failed); returns the configurations stopped by it.

        Raises:
            ValueError: a survivor without scores, lengths that differ or exceed the population.
        """
        values = self._values(scores)
        n = next(iter(values.values())).size
        sign = 1.0 if self.maximize else -1.0
        means = {c: sign * float(np.nanmean(v)) if np.isfinite(v).any() else -math.inf
                 for c, v in values.items()}
        leader = max(values, key=lambda config: means[config])  # first of equals: values keeps config order
        spread = self.bounds[1] - self.bounds[0]
        eliminations = []
        for config, own in values.items():
            if config == leader:
                continue
            both = np.isfinite(own) & np.isfinite(values[leader])
            differences = sign * (own[both] - values[leader][both])
            if not differences.size:
                continue
            interval = self._stopping_interval(differences, spread)
            if interval is not None:
                stop = Elimination(config, round_index, n, leader, float(differences.mean()), *interval,
                                   int(differences.size), int(n - differences.size))
                self._stopped[config] = stop
                eliminations.append(stop)
                log.info("racing: stopped %s after %d questions: %.3f [%.3f, %.3f] behind %s", config, n,
                         stop.difference, stop.low, stop.high, leader)
        self.history.append(RoundRecord(round_index, n, leader, tuple(self.survivors),
                                        tuple(stop.config for stop in eliminations)))
        return eliminations

    def _stopping_interval(self, differences: np.ndarray, spread: float) -> tuple[float, float] | None:
        """(low, high) for the mean difference when the sequence shows it is below 0 (class doc), else None."""
        bounds = (-spread, spread)
        if self.method == "empirical_bernstein":
            low, high = confidence_sequence(differences, self.alpha, bounds, self.population)
            return (float(low[-1]), float(high[-1])) if high[-1] < 0 else None
        if not betting_excludes(differences, 0.0, self.alpha, bounds, self.population, side="upper")[-1]:
            return None
        _, high = betting_bound(differences, self.alpha, bounds, self.population, side="upper")
        low, _ = betting_bound(differences, self.alpha, bounds, self.population, side="lower")
        return float(low), min(float(high), 0.0)

    def _values(self, scores: Mapping[str, Sequence[float | None]]) -> dict[str, np.ndarray]:
        """Each survivor's values as floats, NaN where it failed, in config order."""
        missing = [config for config in self.survivors if config not in scores]
        unknown = sorted(set(scores) - set(self.configs))
        if missing or unknown:
            raise ValueError(f"race scores must cover every survivor and only raced configs: missing "
                             f"{missing}, unknown {unknown}")
        values = {c: np.array(scores[c], dtype=np.float64).ravel() for c in self.survivors}  # None -> NaN
        lo, hi = self.bounds
        outside = sorted(c for c, v in values.items() if ((v < lo) | (v > hi) | np.isinf(v)).any())
        if outside:
            raise ValueError(f"race scores of {outside} fall outside the metric's bounds {self.bounds}")
        lengths = {v.size for v in values.values()}
        if len(lengths) != 1 or not 1 <= lengths.pop() <= self.population:
            raise ValueError(f"race scores must hold the same 1..{self.population} questions for every "
                             f"survivor, got lengths {({c: v.size for c, v in values.items()})}")
        return values
