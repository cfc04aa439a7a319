"""`hydra/launcher=ragsweep`, ragsweep's default: Hydra's basic launcher (the jobs one after another in this
process), each job's config composed once per distinct choice of config groups
(`ragsweep.runner.job_configs`).

    python sweep.py -m k=1,3,5,10 chunker.size=200,400   # Hydra composes once, not eight times
"""

from dataclasses import dataclass

from hydra._internal.core_plugins.basic_launcher import BasicLauncher
from hydra.core.config_store import ConfigStore
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


@dataclass
class RagsweepLauncherConf:
    _target_: str = "hydra_plugins.ragsweep_grid.launcher.RagsweepLauncher"


ConfigStore.instance().store(group="hydra/launcher", name="ragsweep", node=RagsweepLauncherConf,
                             provider="ragsweep")


class RagsweepLauncher(BasicLauncher):
    """The basic launcher with `GroupChoiceLoader` composing its jobs' configs."""

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        from ragsweep.runner.job_configs import GroupChoiceLoader

        choices = GroupChoiceLoader(hydra_context.config_loader)
        super().setup(hydra_context=HydraContext(config_loader=choices, callbacks=hydra_context.callbacks),
                      task_function=task_function, config=config)
