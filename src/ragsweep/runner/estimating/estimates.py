"""What an estimate says: a job's calls per stage and its cost (`JobEstimate`), and the sweep's (`SweepEstimate`),
with the 95% intervals of `intervals.INTERVALS` where a job is scaled by its own held calls."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class StageCount:
    """A job's calls of one stage: how many, how many the cache holds, their tokens."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rough: bool = False


@dataclass
class JobEstimate:
    """One job's expected calls per stage and its cost as its run will log it (`cost_total`: every call, cached
    or not), and what of it is new spending (`new_cost`: calls the cache lacks)."""

    label: str
    questions: int
    stages: dict[str, StageCount] = field(default_factory=dict)
    cost_total: float = 0.0
    new_cost: float = 0.0
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)  # 95%, of `INTERVALS`, when scaled

    def total(self, name: str) -> float:
        """One of `INTERVALS`: the job's prompt or completion tokens (its stages' together) or its cost_total."""
        return self.cost_total if name == "cost_total" else sum(getattr(count, name) for count in self.stages.values())


@dataclass
class SweepEstimate:
    """Every job's estimate; `new_cost` counts each missing call once, as the sweep makes it once (a second
    job asking the same prompt finds it cached)."""

    jobs: list[JobEstimate]
    new_cost: float
    new_calls: int
    interval: tuple[float, float] | None = None  # new_cost's 95% interval, when a job is scaled by its own calls
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)  # the sweep's `INTERVALS`, 95%
    sample: int = 0  # the questions of each job asked first

    def total(self, name: str) -> float:
        """One of `INTERVALS` for the whole sweep: its jobs' together, as their runs will log them."""
        return sum(job.total(name) for job in self.jobs)

    def margin(self) -> float | None:
        """The widest margin of error of the sweep's figures: the farther end of a 95% interval from its figure, as a
        share of the figure (None: no figure has an interval)."""
        return max((max(high - value, value - low) / value for name, (low, high) in self.intervals.items()
                    if (value := self.total(name)) > 0), default=None)
