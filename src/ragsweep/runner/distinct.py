"""A sweep's points that are one configuration run once.

Points of a grid can differ only in groups a job does not build (`retriever=bm25` takes no embedder and no
store, `ragsweep.runner.plan`): `sweeps/retrieval.yaml` has 18 BM25 points and 2 BM25 configurations. The
sweepers keep the first point of each configuration and say how many points they folded into it; the others
would only find its FINISHED run, or, run side by side, compute it twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig

from ragsweep.runner.plan import JobPlan, plan_job

log = logging.getLogger(__name__)


class DistinctPoints:
    """Remembers the configurations of the points kept so far, across a sweep's batches."""

    def __init__(self) -> None:
        self._kept: dict[str, str] = {}  # a configuration's identity: the overrides of the point that runs it

    def keep(self, loader: Any, master_config: DictConfig, points: Sequence[Sequence[str]]) -> list[list[str]]:
        """The points of `points` whose configuration no point kept before has, each composed by `loader` (a
        Hydra `ConfigLoader`) from `master_config`. A point whose config cannot be planned is kept: its job
        reports why."""
        kept: list[list[str]] = []
        folded: dict[str, list[str]] = {}
        for point in points:
            try:
                plan = _quiet_plan(loader.load_sweep_config(master_config, list(point)))
            except Exception:  # noqa: BLE001  (its job fails with the error, one line, as without this check)
                kept.append(list(point))
                continue
            identity = plan.point_identity()
            if identity in self._kept:
                folded.setdefault(self._kept[identity], []).append(" ".join(point))
                continue
            self._kept[identity] = " ".join(point) or "defaults"
            kept.append(list(point))
        for runs, same in folded.items():
            log.info("%d point(s) are the configuration of `%s` (they differ only in groups it does not use) "
                     "and run once with it: %s", len(same), runs, "; ".join(same))
        if folded:
            log.info("%d of %d points run: %d folded into a configuration another point runs",
                     len(kept), len(points), len(points) - len(kept))
        return kept


def _quiet_plan(cfg: DictConfig) -> JobPlan:
    """The point's plan, without the notes its job logs when it plans itself (a raised depth)."""
    planning = logging.getLogger(plan_job.__module__)
    level = planning.level
    planning.setLevel(logging.WARNING)
    try:
        return plan_job(cfg)
    finally:
        planning.setLevel(level)
