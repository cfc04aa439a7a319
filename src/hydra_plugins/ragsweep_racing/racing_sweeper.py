"""`hydra/sweeper=racing`: a grid, like the basic sweeper, run as a race that stops losing configurations early.

    python sweep.py -m hydra/sweeper=racing k=1,3,5,10 chunker=recursive,fixed
    python sweep.py -m hydra/sweeper=racing +sweep=generation hydra.sweeper.racing.metric=answer_f1

The race itself is `ragsweep.runner.racing`; this class is its Hydra face: it expands the grid as the
basic sweeper does (each configuration once, `ragsweep.runner.distinct`), launches each round through the
configured launcher and records the race on the sweep's MLflow parent run.
"""


import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobStatus
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)


@dataclass
class RacingConf:
    metric: Optional[str] = None  # default: optimized_metric; a per-question metric with bounds
    delta: float = 0.05  # the chance of stopping the true best
    min_questions: int = 10  # the first round runs at least this many questions
    schedule: Optional[List[float]] = None  # shares run after each round; null: grown from the question set
    seed: int = 0  # the seed of the one question order every configuration takes


@dataclass
class RacingSweeperConf:
    _target_: str = "hydra_plugins.ragsweep_racing.racing_sweeper.RacingSweeper"
    params: Optional[Dict[str, str]] = None
    racing: RacingConf = field(default_factory=RacingConf)


ConfigStore.instance().store(group="hydra/sweeper", name="racing", node=RacingSweeperConf, provider="ragsweep")


class RacingSweeper(Sweeper):
    """Expands `params` and the command line's sweeps into a grid and races it (`ragsweep.runner.racing.sweep`)."""

    def __init__(self, params: Optional[Dict[str, str]] = None, racing: Optional[Dict[str, Any]] = None) -> None:
        super().__init__()
        self.params = dict(params or {})
        self.racing = racing
        self.config: Optional[DictConfig] = None
        self.hydra_context: Optional[HydraContext] = None
        self.launcher = None
        self.loader: Any = None  # composes the jobs once per choice of groups (`launcher_loader`)
        self.job_index = 0

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        from hydra.core.plugins import Plugins

        self.config, self.hydra_context = config, hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(hydra_context=hydra_context,
                                                                task_function=task_function, config=config)

    def sweep(self, arguments: List[str]) -> Any:
        from ragsweep.hydra_internals import sweep_points
        from ragsweep.runner.distinct import DistinctPoints
        from ragsweep.runner.job_configs import launcher_loader
        from ragsweep.runner.racing.sweep import RacingSettings, run_race
        from ragsweep.tracking.racing import record_race

        assert self.config is not None and self.hydra_context is not None
        settings = RacingSettings.from_config(OmegaConf.to_container(OmegaConf.create(self.racing or {})),
                                              self.config.get("optimized_metric"))
        lines = [*(f"{key}={value}" for key, value in self.params.items()), *arguments]
        parsed = OverridesParser.create(config_loader=self.hydra_context.config_loader).parse_overrides(lines)
        self.loader = launcher_loader(self.launcher, self.hydra_context.config_loader)
        grid = DistinctPoints().keep(self.loader, self.config, sweep_points(parsed))
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        log.info("racing %d configurations on %s (delta %s, schedule %s)", len(grid), settings.metric,
                 settings.delta, settings.describe_schedule(len(grid)))
        exclude = list(self.config.hydra.job.config.override_dirname.exclude_keys)
        record = run_race(grid, settings, self._launch, exclude)
        record_race(self.config, record, sweep_dir)
        print(f"\n{record.summary()} (race.md in {sweep_dir})")
        return record

    def validate_batch_is_legal(self, batch: List[List[str]]) -> None:
        """Each job composes, through the loader the launcher composes with (Hydra's own check composes every job
        from the YAML files up: 0.7 s a configuration)."""
        assert self.config is not None
        for overrides in batch:
            self.loader.load_sweep_config(self.config, list(overrides))

    def _launch(self, batch: List[List[str]]) -> List[Any]:
        """One round's jobs through the configured launcher; each job's race.json, or None when it failed."""
        if self.job_index == 0:
            self.validate_batch_is_legal(batch)
        results = self.launcher.launch(batch, initial_job_idx=self.job_index)
        self.job_index += len(batch)
        returned = []
        for result in results:
            value = result.return_value if result.status == JobStatus.COMPLETED else None
            returned.append(value if isinstance(value, dict) else None)
        return returned
