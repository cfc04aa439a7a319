"""`hydra/sweeper=racing`: a grid, like the basic sweeper, run as a race that stops losing configurations early.

    python sweep.py -m hydra/sweeper=racing k=1,3,5,10 chunker=recursive,fixed
    python sweep.py -m hydra/sweeper=racing +sweep=generation hydra.sweeper.racing.metric=answer_f1

The race itself is `ragsweep.runner.racing`; this class is its Hydra face: it expands the grid as the
basic sweeper does (each configuration once, `ragsweep.runner.distinct`), launches the first round through the
configured launcher, hands later rounds to the configurations kept in this process (`ragsweep.runner.racing.kept`:
those the basic launcher ran here) and launches the rest again, and records the race on the sweep's MLflow parent
run.
"""


import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

from hydra.core.config_store import ConfigStore
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
        from ragsweep.hydra_internals import parse_overrides, sweep_points
        from ragsweep.runner.distinct import DistinctPoints
        from ragsweep.runner.job_configs import launcher_loader
        from ragsweep.runner.racing.kept import KEPT
        from ragsweep.runner.racing.sweep import RacingSettings, run_race
        from ragsweep.tracking.racing import record_race

        assert self.config is not None and self.hydra_context is not None
        settings = RacingSettings.from_config(OmegaConf.to_container(OmegaConf.create(self.racing or {})),
                                              self.config.get("optimized_metric"))
        lines = [*(f"{key}={value}" for key, value in self.params.items()), *arguments]
        parsed = parse_overrides(lines, self.hydra_context.config_loader)
        self.loader = launcher_loader(self.launcher, self.hydra_context.config_loader)
        grid = DistinctPoints().keep(self.loader, self.config, sweep_points(parsed))
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        log.info("racing %d configurations on %s (delta %s, schedule %s)", len(grid), settings.metric,
                 settings.delta, settings.describe_schedule(len(grid)))
        exclude = list(self.config.hydra.job.config.override_dirname.exclude_keys)
        if _runs_jobs_here(self.launcher):
            KEPT.open()
        try:
            record = run_race(grid, settings, self._launch, exclude)
        finally:
            KEPT.close()
        record_race(self.config, record, sweep_dir)
        print(f"\n{record.summary()} (race.md in {sweep_dir})")
        return record

    def validate_batch_is_legal(self, batch: List[List[str]]) -> None:
        """Each job composes, through the loader the launcher composes with (Hydra's own check composes every job
        from the YAML files up: 0.7 s a configuration)."""
        assert self.config is not None
        for overrides in batch:
            self.loader.load_sweep_config(self.config, list(overrides))

    @contextmanager
    def _job_logging(self, folder: Path) -> Iterator[None]:
        """Hydra's job logging (`hydra.job_logging`), its log file in a kept job's own folder, as Hydra's launch of
        that job set it; then the sweep's own logging again, as Hydra's launcher leaves it."""
        from hydra.core.utils import configure_log

        assert self.config is not None
        hydra = self.config.hydra
        job = OmegaConf.create({"hydra": OmegaConf.to_container(hydra, resolve=False)})
        job.hydra.runtime.output_dir = str(folder)
        configure_log(job.hydra.job_logging, hydra.verbose)
        try:
            yield
        finally:
            configure_log(hydra.hydra_logging, hydra.verbose)

    def _launch(self, jobs: List[Any]) -> List[Any]:
        """One round's jobs (`RoundJob`s): each kept configuration continued here, the others through the
        configured launcher; each job's race.json, or None when it failed. Configurations the race left out of
        this round (stopped, failed) are let go first."""
        from ragsweep.hydra_internals import env_override
        from ragsweep.runner.racing.kept import KEPT

        assert self.config is not None
        KEPT.keep_only({job.slot for job in jobs if not _sets_hydra(job.point)})  # such a point: its Hydra settings
        returned = {}
        for job in jobs:
            if job.slot in KEPT:
                log.info("\tcontinued: %s", " ".join(job.point))
                with env_override(self.config.hydra.job.env_set), self._job_logging(KEPT.folder(job.slot)):
                    returned[job.slot] = KEPT.run(job.slot, job.race)
        launched = [job for job in jobs if job.slot not in returned]
        if launched:
            batch = [job.overrides for job in launched]
            if self.job_index == 0:
                self.validate_batch_is_legal(batch)
            results = self.launcher.launch(batch, initial_job_idx=self.job_index)
            self.job_index += len(batch)
            for job, result in zip(launched, results):
                value = result.return_value if result.status == JobStatus.COMPLETED else None
                returned[job.slot] = value if isinstance(value, dict) else None
        return [returned[job.slot] for job in jobs]


def _runs_jobs_here(launcher: Any) -> bool:
    """Whether the launcher runs each job in this process, one after the other: Hydra's basic launcher and those
    built on it (ragsweep's default), whose jobs a race keeps between rounds. Told by name: Hydra's plugin scan
    imports its core plugins anew, so the class imported here may not be the one the launcher extends."""
    return any(cls.__name__ == "BasicLauncher" for cls in type(launcher).__mro__)


def _sets_hydra(point: List[str]) -> bool:
    """Whether a grid point sets Hydra's own settings (`hydra.job.env_set.X=...`), which only a launch applies."""
    return any(override.lstrip("+~").startswith("hydra.") for override in point)
