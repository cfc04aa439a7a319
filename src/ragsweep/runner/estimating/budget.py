"""A sweep's `budget`: the estimated cost of its new model calls, checked before it starts (`Budget`)."""

from __future__ import annotations

import logging

from omegaconf import DictConfig

from ragsweep.runner.errors import ConfigError
from ragsweep.runner.estimating.sweep import SweepEstimator

log = logging.getLogger(__package__)  # the estimate's logger, named as when it was one module


class Budget:
    """The `budget` setting: when a sweep sets it, its points are estimated before it starts, and a sweep whose
    new calls would cost more stops there, having started nothing."""

    def __init__(self) -> None:
        self.limit: float | None = None
        self._estimator = SweepEstimator()

    def visit(self, point: list[str], cfg: DictConfig) -> None:
        limit = cfg.get("budget")
        if limit is None:
            return
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit >= 0:
            raise ConfigError(f"budget={limit!r}: give the money a sweep may spend on new model calls, a number >= 0 "
                              "in the currency of prices.models (or null for no limit)")
        self.limit = float(limit)
        self._estimator.visit(point, cfg)

    def problem(self) -> str | None:
        """Why the sweep may not start (None: no budget, or its estimate is within it)."""
        if self.limit is None:
            return None
        spent = self._estimator.estimate()
        if spent.new_cost <= self.limit:
            log.info("budget=%g: the sweep's %d new model calls should cost about %.3g", self.limit, spent.new_calls,
                     spent.new_cost)
            return None
        return (f"budget={self.limit:g}: the sweep's {spent.new_calls} new model calls would cost about "
                f"{spent.new_cost:.3g} (ragsweep estimate with the same arguments shows each job's); raise budget or "
                "narrow the grid")
