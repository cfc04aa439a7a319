"""What a warm configuration costs in a real `python sweep.py -m`, everything a multirun does included.

`benchmarks/grid.py` times its jobs in one process, composed as ragsweep's launcher composes them and run
through the runner; a real multirun also pays Hydra's `run_job` (each job's `.hydra/` files, its logging),
the check for a FINISHED run of the same configuration, the sweep's MLflow parent run and its summary. This
script runs `sweep.py -m` on chroma_general (minilm, recursive 200-token chunks, as grid.py's first chunker)
as subprocesses sharing one work folder:
  1. cold: stores numpy, chroma, qdrant x k 1, 3, 5, 10 (12 jobs), filling the stage cache;
  2. warm, a new experiment: the same 12 jobs;
  3. warm, another new experiment: one of them (store=numpy k=1).
A warm configuration costs (seconds of 2 - seconds of 3) / 11: what each further job adds to a sweep,
without the process's start (imports, loading the model) that every sweep pays once. Prints the three wall
times and, last, `sweep_warm_ms_per_config=X`.

`--smallest` (what `make test` runs): k=1 alone (3 jobs, then 3, then 1) on benchmarks/smallest.py's short
addresses.

Usage: python benchmarks/warm_sweep.py [--data ../shared/data/chroma_general] [--smallest]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from smallest import chroma_general_folder

ROOT = Path(__file__).resolve().parents[1]


def sweep(work: Path, data: Path, experiment: str, stores: str, ks: str) -> float:
    """Wall seconds of one `sweep.py -m` over `stores` x `ks`; raises if it fails."""
    command = [sys.executable, str(ROOT / "sweep.py"), "-m", "chunker=recursive", "chunker.size=200",
               "chunker.overlap=0", f"store={stores}", f"k={ks}", "dataset=chroma_general", f"dataset.path={data}",
               f"paths.root={work}", "embedder.progress=false", f"experiment={experiment}"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, env=os.environ.copy())
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"sweep failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="default ../shared/data/chroma_general")
    parser.add_argument("--smallest", action="store_true", help="3 jobs on tiny data (make test runs it)")
    args = parser.parse_args()
    stores, ks = "numpy,chroma,qdrant", "1" if args.smallest else "1,3,5,10"
    jobs = len(stores.split(",")) * len(ks.split(","))
    with tempfile.TemporaryDirectory(prefix="ragsweep-warm-sweep-") as scratch:
        work = Path(scratch)
        data = chroma_general_folder(args.data, args.smallest, work)
        cold = sweep(work, data, "cold", stores, ks)
        warm = sweep(work, data, "warm", stores, ks)
        one = sweep(work, data, "one", "numpy", "1")
    per_config = (warm - one) / (jobs - 1)
    print(f"cold sweep, {jobs} jobs: {cold:.1f} s")
    print(f"warm sweep, {jobs} jobs: {warm:.1f} s")
    print(f"warm sweep, 1 job: {one:.1f} s (the process's start, paid once a sweep)")
    print(f"sweep_warm_ms_per_config={per_config * 1000:.0f}")


if __name__ == "__main__":
    main()
