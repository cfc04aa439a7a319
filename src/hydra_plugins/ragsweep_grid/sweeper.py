"""`hydra/sweeper=ragsweep`, ragsweep's default: Hydra's basic sweeper (the grid of the command line and
`hydra.sweeper.params`), its check that every job of a batch composes done as ragsweep's launcher composes
(`ragsweep.runner.job_configs`), on the launcher's own loader when it is ragsweep's, so the launcher reuses
what the check composed; each configuration once, however many points of the grid it is
(`ragsweep.runner.distinct`); and, when a batch has fewer jobs than the launcher has workers, embedding helpers for
the idle ones (`ragsweep.runner.embedding_helpers`).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper, BasicSweeperConf
from hydra.core.config_store import ConfigStore


@dataclass
class RagsweepSweeperConf(BasicSweeperConf):
    _target_: str = "hydra_plugins.ragsweep_grid.sweeper.RagsweepSweeper"


ConfigStore.instance().store(group="hydra/sweeper", name="ragsweep", node=RagsweepSweeperConf,
                             provider="ragsweep")


class RagsweepSweeper(BasicSweeper):
    """The basic sweeper, composing its batches' configs once per choice of config groups."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from ragsweep.runner.distinct import DistinctPoints

        super().__init__(*args, **kwargs)
        self.distinct = DistinctPoints()
        self.own_loader: Any = None

    def get_job_batch(self) -> Sequence[Sequence[str]]:
        """The next batch's distinct configurations, plus a helper for each worker they would leave idle
        (`ragsweep.runner.embedding_helpers`)."""
        from ragsweep.runner.embedding_helpers import helper_jobs

        assert self.config is not None
        batch = self.distinct.keep(self.loader(), self.config, super().get_job_batch())
        return [*batch, *helper_jobs(self.config, batch)]

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        assert self.config is not None
        loader = self.loader()
        for overrides in batch:
            loader.load_sweep_config(self.config, list(overrides))

    def loader(self) -> Any:
        """The loader that composes the sweep's jobs once per choice of groups (`launcher_loader`)."""
        from ragsweep.runner.job_configs import launcher_loader

        assert self.hydra_context is not None
        if self.own_loader is None:
            self.own_loader = launcher_loader(self.launcher, self.hydra_context.config_loader)
        return self.own_loader
