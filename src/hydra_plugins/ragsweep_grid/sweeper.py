"""`hydra/sweeper=ragsweep`, ragsweep's default: Hydra's basic sweeper (the grid of the command line and
`hydra.sweeper.params`), its check that every job of a batch composes done as ragsweep's launcher composes
(`ragsweep.runner.job_configs`), on the launcher's own loader when it is ragsweep's, so the launcher reuses
what the check composed; and, when a batch has fewer jobs than the launcher has workers, embedding helpers for
the idle ones (`ragsweep.runner.embedding_helpers`).
"""

from collections.abc import Sequence
from dataclasses import dataclass

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper, BasicSweeperConf
from hydra.core.config_store import ConfigStore


@dataclass
class RagsweepSweeperConf(BasicSweeperConf):
    _target_: str = "hydra_plugins.ragsweep_grid.sweeper.RagsweepSweeper"


ConfigStore.instance().store(group="hydra/sweeper", name="ragsweep", node=RagsweepSweeperConf,
                             provider="ragsweep")


class RagsweepSweeper(BasicSweeper):
    """The basic sweeper, composing its batches' configs once per choice of config groups."""

    def get_job_batch(self) -> Sequence[Sequence[str]]:
        """The next batch, plus a helper for each worker it would leave idle (`ragsweep.runner.embedding_helpers`)."""
        from ragsweep.runner.embedding_helpers import helper_jobs

        assert self.config is not None
        batch = [list(job) for job in super().get_job_batch()]
        return [*batch, *helper_jobs(self.config, batch)]

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        from ragsweep.runner.job_configs import GroupChoiceLoader

        assert self.hydra_context is not None and self.config is not None
        launched = getattr(self.launcher, "hydra_context", None)
        loader = launched.config_loader if launched is not None else None
        if not isinstance(loader, GroupChoiceLoader):
            loader = GroupChoiceLoader(self.hydra_context.config_loader)
        for overrides in batch:
            loader.load_sweep_config(self.config, list(overrides))
