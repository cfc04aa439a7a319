"""Are 2 joblib workers faster than 1 process on this machine? Wall time of the same sweeps, run both ways.

Each sweep runs as a user runs it (`python sweep.py -m ...`) on the embedded dataset, once with
Hydra's basic launcher and once with `hydra/launcher=joblib hydra.launcher.n_jobs=2`, each on an
empty stage cache and MLflow store, so both do the same work from scratch. Two grids:
  independent: 6 chunkings (recursive and sentence x size 100, 200, 300): six separate embeddings;
  shared:      the quick grid (recursive and fixed x k 3, 5): two embeddings the k jobs share.
Prints a table and, as its last line, `independent_two_over_one=X shared_two_over_one=Y`.

Usage: python benchmarks/parallel.py [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRIDS = {
    "independent": ["chunker=recursive,sentence", "chunker.size=100,200,300"],
    "shared": ["+sweep=quick"],
}
LAUNCHERS = {"1 process (basic)": [], "2 workers (joblib)": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]}


def sweep_seconds(grid: list[str], launcher: list[str]) -> float:
    with tempfile.TemporaryDirectory(prefix="ragsweep-parallel-") as folder:
        command = [sys.executable, str(ROOT / "sweep.py"), "-m", *grid, *launcher, f"cache.dir={folder}/cache",
                   f"paths.mlruns={folder}/mlruns", f"paths.outputs={folder}/outputs"]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"sweep failed: {' '.join(command)}\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="runs of each (the minimum is reported)")
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}")
    print(f"{'grid':<12} {'launcher':<20} {'seconds':>8}")
    ratios = {}
    for grid_name, grid in GRIDS.items():
        times = {}
        for launcher_name, launcher in LAUNCHERS.items():
            times[launcher_name] = min(sweep_seconds(grid, launcher) for _ in range(args.repeats))
            print(f"{grid_name:<12} {launcher_name:<20} {times[launcher_name]:>8.1f}", flush=True)
        one, two = times.values()
        ratios[grid_name] = two / one
    print(" ".join(f"{name}_two_over_one={ratio:.3f}" for name, ratio in ratios.items()))


if __name__ == "__main__":
    main()
