"""Are 2 joblib workers faster than 1 process on this machine? Wall time of the same sweeps, run both ways.

Each sweep runs as a user runs it (`python sweep.py -m ...`), with Hydra's basic launcher and with
`hydra/launcher=joblib hydra.launcher.n_jobs=2`, each on an empty stage cache and MLflow store, so
both do the same work from scratch. Grids:
  independent:    6 chunkings of the embedded dataset (recursive, sentence x size 100, 200, 300);
  shared:         the quick grid (recursive, fixed x k 3, 5): two embeddings the k jobs share;
  chroma_general: 4 chunkings of the benchmark corpora (recursive, sentence x size 200, 400);
  warm:           54 points (2 chunkers x 3 stores x 3 retrievers x k 1, 5, 10), 42 jobs (BM25 takes no
                  store) on chroma_general, each launcher starting from a copy of a warm stage cache: only
                  Python-bound work is left.
A third way, 2 workers without ragsweep's preloaded fork server (loky's fresh interpreters), shows
what the server gains. Prints a table and, as its last line, `<grid>_two_over_one=X
<grid>_no_preload_over_one=Y ...` (2 workers' seconds over 1 process's). With --repeats N, each way
runs N times, interleaved, and the fastest run counts: this shared machine's speed drifts.

`--smallest` (what `make test` runs): one grid, `smallest` (2 chunkings of benchmarks/smallest.py's short addresses,
retriever=bm25), run warm as `warm` is: a warm-up sweep, then each launcher from a copy of its cache.

Usage: python benchmarks/parallel.py [--repeats 1] [--grids independent,shared,chroma_general,warm] [--smallest]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMA_GENERAL = ["dataset=chroma_general", f"paths.data={ROOT.parent / 'shared' / 'data'}"]
GRIDS = {
    "independent": ["chunker=recursive,sentence", "chunker.size=100,200,300"],
    "shared": ["+sweep=quick"],
    "chroma_general": [*CHROMA_GENERAL, "chunker=recursive,sentence", "chunker.size=200,400"],
    # every job served from a warm stage cache: the Python-bound work left (scoring, MLflow) in parallel
    "warm": [*CHROMA_GENERAL, "chunker=recursive,fixed", "store=numpy,chroma,qdrant", "retriever=dense,bm25,hybrid",
             "k=1,5,10"],
}
WARM = {"warm"}  # grids run once untimed first; each launcher then starts from a copy of that cache
JOBLIB = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
LAUNCHERS = {"1 process (basic)": [], "2 workers (joblib)": JOBLIB,
             # loky's fresh interpreters, as without ragsweep's preloaded fork server (runner.workers)
             "2 workers (no preload)": [*JOBLIB, "~hydra.callbacks.preloaded_workers"]}


def sweep_seconds(grid: list[str], launcher: list[str], warm_cache: Path | None = None) -> float:
    with tempfile.TemporaryDirectory(prefix="ragsweep-parallel-") as folder:
        if warm_cache is not None:
            shutil.copytree(warm_cache, f"{folder}/cache")
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
    parser.add_argument("--grids", default=",".join(GRIDS), help=f"comma-separated subset of {', '.join(GRIDS)}")
    parser.add_argument("--smallest", action="store_true", help="one tiny warm grid (make test runs it)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragsweep-parallel-data-") as data:
        grids, warm = {name: GRIDS[name] for name in args.grids.split(",")}, WARM
        if args.smallest:
            from smallest import chroma_general

            grids = {"smallest": ["dataset=chroma_general", f"paths.data={chroma_general(Path(data))}",
                                  "chunker=recursive", "chunker.size=100,200", "retriever=bm25"]}
            warm = {"smallest"}
        compare(grids, warm, args.repeats)


def compare(grids: dict[str, list[str]], warm_grids: set[str], repeats: int) -> None:
    """Each grid's sweeps, `repeats` times each way (those of `warm_grids` from a warm cache); prints the table and
    the ratios."""
    print(f"cores: {os.cpu_count()}")
    print(f"{'grid':<15} {'launcher':<24} {'fastest':>8}  every run (s)")
    ratios = {}
    for grid_name, grid in grids.items():
        runs: dict[str, list[float]] = {name: [] for name in LAUNCHERS}
        with tempfile.TemporaryDirectory(prefix="ragsweep-warm-") as warm:
            warm_cache = _warm_up(grid, Path(warm)) if grid_name in warm_grids else None
            for _ in range(repeats):  # interleaved, so drift spreads over every launcher
                for launcher_name, launcher in LAUNCHERS.items():
                    runs[launcher_name].append(sweep_seconds(grid, launcher, warm_cache))
        times = {name: min(seconds) for name, seconds in runs.items()}
        for name, seconds in runs.items():
            print(f"{grid_name:<15} {name:<24} {times[name]:>8.1f}  {' / '.join(f'{t:.1f}' for t in seconds)}",
                  flush=True)
        ratios[f"{grid_name}_two_over_one"] = times["2 workers (joblib)"] / times["1 process (basic)"]
        ratios[f"{grid_name}_no_preload_over_one"] = times["2 workers (no preload)"] / times["1 process (basic)"]
    print(" ".join(f"{name}={ratio:.3f}" for name, ratio in ratios.items()))


def _warm_up(grid: list[str], folder: Path) -> Path:
    command = [sys.executable, str(ROOT / "sweep.py"), "-m", *grid, f"cache.dir={folder}/cache",
               f"paths.mlruns={folder}/mlruns", f"paths.outputs={folder}/outputs"]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"warm-up sweep failed: {' '.join(command)}\n{done.stderr[-2000:]}")
    return folder / "cache"


if __name__ == "__main__":
    main()
