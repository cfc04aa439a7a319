"""Entry point: `python sweep.py` runs one configuration, `python sweep.py -m ...` a grid."""

import signal
import sys
from pathlib import Path

import ragsweep  # noqa: F401  (sets offline defaults before Hydra, MLflow and torch load)
import hydra
from omegaconf import DictConfig

from ragsweep.runner.interrupts import interrupt
from ragsweep.runner.preflight import exit_on_bad_command_line
from ragsweep.runner.run import main as run_job

CONF = Path(__file__).parent / "conf"


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    """Run one sweep point; return the metric a sweeper optimises, if any."""
    return run_job(cfg)


if __name__ == "__main__":
    exit_on_bad_command_line(sys.argv[1:], CONF)  # every point checked before Hydra starts anything
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when started with SIGINT ignored
        signal.signal(signal.SIGINT, interrupt)
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C: runs are closed KILLED and a sweep says so in one line as it exits
        if not {"-m", "--multirun"} & set(sys.argv[1:]):
            print("ragsweep: interrupted: the run is closed as KILLED; run the same command again", file=sys.stderr)
        raise SystemExit(130) from None
