"""Entry point: `python sweep.py` runs one configuration, `python sweep.py -m ...` a grid (as `ragsweep sweep`)."""

import sys
from pathlib import Path

import ragsweep  # noqa: F401  (sets offline defaults before Hydra, MLflow and torch load)
from ragsweep.runner.entry import sweep

if __name__ == "__main__":
    sweep(sys.argv[1:], Path(__file__).resolve().parent / "conf")
