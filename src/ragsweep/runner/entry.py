"""Where a project's configs live, and the entry point of `sweep.py` and `ragsweep sweep`.

The default configs and named grids ship inside the package (`ragsweep/conf`, Hydra's
`pkg://ragsweep.conf`); in a checkout that folder is a link to the top-level `conf/`. A project made by
`ragsweep init` has its own `conf/config.yaml`, which extends the packaged `ragsweep.yaml` and adds the
package to Hydra's search path, so its own groups and the packaged ones are both found. A folder with
no `conf/config.yaml` runs on the packaged configs alone.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig

from ragsweep.packaged import PACKAGED_CONF, with_packaged

log = logging.getLogger(__name__)


PROJECT_CONFIG = """\
# This project's config: ragsweep's packaged defaults (ragsweep.yaml in pkg://ragsweep.conf; see them with
# `ragsweep sweep --cfg job`), then your own settings. Choose your own components below, e.g.
#   - override dataset: my_data     (conf/dataset/my_data.yaml)
defaults:
  - ragsweep
  - _self_

hydra:
  searchpath:
    - pkg://ragsweep.conf
"""


def conf_dir(project: Path, primary: str = "config") -> Path:
    """The folder the primary config (`config`, or `generate` for `ragsweep generate`) is read from: the project's
    `conf/` when it has that file, else the packaged one."""
    own = project / "conf"
    return own if (own / f"{primary}.yaml").is_file() else PACKAGED_CONF


def conf_dirs(project: Path) -> list[Path]:
    """Every folder a project's config is composed from: its own `conf/` (when it has one), then the package's."""
    return with_packaged(conf_dir(project))


def ensure_project_config(project: Path) -> Path | None:
    """Write the project's `conf/config.yaml` when it has none, so that a config written under its `conf/` (an
    export, a fitted judge) is found by `ragsweep sweep` there; the file written, or None."""
    path = project / "conf" / "config.yaml"
    if path.is_file():
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PROJECT_CONFIG, encoding="utf-8")
    log.info("wrote %s (it extends the packaged defaults), so that `ragsweep sweep` here finds conf/", path)
    return path


def sweep(argv: Sequence[str], conf: Path) -> None:
    """`python sweep.py ARGS` / `ragsweep sweep ARGS`: every point checked, then Hydra runs the job or the grid."""
    import hydra

    from ragsweep.hydra_internals import reported_first
    from ragsweep.interrupts import interrupt
    from ragsweep.runner.estimating.budget import Budget
    from ragsweep.runner.overrides import home_expanded
    from ragsweep.runner.preflight import exit_on_bad_command_line
    from ragsweep.runner.workers import PLANNED

    argv = home_expanded(argv)  # `dataset.path=~/x` as a shell reads `~/x`, for the checks and for Hydra
    budget = Budget()

    def visit(point: list[str], cfg: DictConfig) -> None:
        budget.visit(point, cfg)
        PLANNED.visit(point, cfg)

    exit_on_bad_command_line(argv, conf, visit=visit)  # every point checked before Hydra starts anything
    over = budget.problem()
    if over:
        print(f"ragsweep: error: {over}", file=sys.stderr)
        raise SystemExit(2)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when started with SIGINT ignored
        signal.signal(signal.SIGINT, interrupt)
    sys.argv = [sys.argv[0], *argv]  # Hydra reads its command line from sys.argv
    try:
        with reported_first(_end_on_refused_write):  # a disk that fills during the sweep, past the checks above
            hydra.main(version_base="1.3", config_path=str(conf), config_name="config")(job)()
    except KeyboardInterrupt:  # Ctrl-C: runs are closed KILLED and a sweep says so in one line as it exits
        if not {"-m", "--multirun"} & set(argv):
            print("ragsweep: interrupted: the run is closed as KILLED; run the same command again", file=sys.stderr)
        raise SystemExit(130) from None


def _end_on_refused_write(error: Exception) -> None:
    """End in one line, exit code 1, a write refused where no job catches it: a job's output folder and its
    `.hydra/` files, which Hydra writes before the job starts, or the MLflow store of a sweep's parent run."""
    from ragsweep.disk import cannot_write, write_refused
    from ragsweep.tracking.store import STORE_SETTING, full_store

    full = full_store(error)
    refused = write_refused(error)
    if full is None and refused is None:
        return
    refused, setting = (full, STORE_SETTING) if full is not None else _in_hydra_folder(refused, error)
    print(f"ragsweep: error: {cannot_write(refused, setting)}", file=sys.stderr)
    raise SystemExit(1) from None


def _in_hydra_folder(refused: OSError, error: Exception) -> tuple[OSError, str | None]:
    """`refused` naming the output folder Hydra was writing in when it raised `error`, if it names no file (a write
    that fails does not), and the settings that move that folder when the write was in it; else no setting."""
    from ragsweep.disk import naming
    from ragsweep.hydra_internals import writing_folder

    written = writing_folder(error)
    if written is None:
        return refused, None
    key, folder = written
    refused = naming(refused, folder)
    inside = Path(str(refused.filename)).resolve().is_relative_to(folder.resolve())
    return refused, f"paths.outputs or {key}" if inside else None


def job(cfg: DictConfig) -> float | list[float] | dict | None:
    """One sweep point, as Hydra runs it; returns the metric a sweeper optimises, if any. The one place a job
    reads Hydra's globals: its name, output folder and, in a multirun, the sweep's parent run."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from ragsweep.runner.plan import JobNaming
    from ragsweep.runner.run import RunContext, main
    from ragsweep.tracking.tags import PARENT_RUN_ENV

    hydra = HydraConfig.get()
    # The launching process puts the parent run in every job's config (`SweepRun.hand_to_jobs`), and Hydra sets
    # it in the job's environment wherever the job runs: a local worker, a Ray node, a SLURM node.
    parent = (os.environ.get(PARENT_RUN_ENV) or None) if hydra.mode == RunMode.MULTIRUN else None
    return main(cfg, JobNaming.from_hydra(hydra), RunContext(Path(hydra.runtime.output_dir), parent))
