"""What a newcomer's `make run` costs on a fresh clone: the install with an empty pip cache, then the sweep.

Clones this checkout (its committed HEAD) into a temporary folder and runs `make install` there with a
private, empty pip cache (PIP_CACHE_DIR), so nothing built or downloaded before is reused, then `make run`
(the sweep alone, the install being done). Prints both wall times and, last,
`install_s=I sweep_s=S total_s=T`. The issue's target: the install <= 5 min and the whole <= 10 min on an
idle 2-core machine; run it with nothing else on the cores.

`--smallest` (what `make test` runs): no install (the clone's .venv is a link to the running interpreter's, which
make takes as installed, so the ragsweep that runs is that venv's), and `make run` sweeps one job (bm25) on 3
questions; what it times is only that `make run`.

Usage: python benchmarks/first_run.py [--keep] [--smallest]
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


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the clone and its pip cache")
    parser.add_argument("--smallest", action="store_true",
                        help="this interpreter's venv, no install, a one-job `make run` (make test runs it)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ragsweep-first-run-"))
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(work / "clone")], check=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "HF_", "MLFLOW_"))}
        env["PIP_CACHE_DIR"] = str(work / "pip-cache")
        run = ["make", "run"]
        if args.smallest:  # the venv of this interpreter, taken as installed (-o: never remade), and a small sweep
            (work / "clone" / ".venv").symlink_to(Path(sys.prefix))
            run += ["-o", ".venv/.installed", "-o", ".venv/bin/python",
                    "SWEEP=generator=none retriever=bm25 k=3 dataset.limit=3"]
            install = 0.0
            print(f"make install: left out (--smallest: {sys.prefix} taken as installed)", flush=True)
        else:
            install = timed(["make", "install"], work / "clone", env)
            print(f"make install, empty pip cache: {install:.1f} s", flush=True)
        sweep = timed(run, work / "clone", env)
        print(f"make run, installed: {sweep:.1f} s", flush=True)
        print(f"install_s={install:.1f} sweep_s={sweep:.1f} total_s={install + sweep:.1f}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
