"""How often a job's config, followed call by call, comes back to a file it had left.

Runs one real job (`runner.run.main`, on the embedded dataset unless overrides say otherwise) under a profiler
that notes every call of ragsweep's own code that is handed the job's config in a form that carries it: the
composed `DictConfig` or any of its nodes, the `JobPlan`, the `Pipeline`. Consecutive calls in one file are one
stay; a stay in a file the config had already been in and left is a return. Prints the stays, the files, the
returns, the files returned to most, and last `config_walk calls=N stays=S files=F returns=R`.

Run it before and after a change to the runner to see whether the config's path got shorter. Counted at run
time, so only the branches the job takes count (a retrieval-only job never enters the judging code).

`--smallest` (what `make test` runs): the job on benchmarks/smallest.py's three short addresses instead.

Usage: python benchmarks/config_walk.py [--smallest] [override ...]      e.g. generator=extractive judge=lexical
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OWN = (str(ROOT / "src" / "ragsweep"), str(ROOT / "src" / "hydra_plugins"))


def walk(overrides: list[str]) -> list[str]:
    """The file of every call of ragsweep's code that is handed the job's config, in order."""
    import ragsweep  # noqa: F401  (offline defaults)
    from hydra import compose, initialize_config_dir
    from omegaconf import Container

    from ragsweep.runner.build import Pipeline
    from ragsweep.runner.plan import JobPlan
    from ragsweep.runner.run import RunContext, main

    work = Path(tempfile.mkdtemp(prefix="ragsweep-walk-"))
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[f"paths.root={work}", *overrides])
    carriers = (Container, JobPlan, Pipeline)
    files: list[str] = []

    def profile(frame, event, _arg):
        if event != "call" or not frame.f_code.co_filename.startswith(OWN):
            return
        code = frame.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if any(isinstance(frame.f_locals.get(name), carriers) for name in names):
            files.append(str(Path(code.co_filename).relative_to(ROOT / "src")))

    sys.setprofile(profile)
    try:
        main(cfg, None, RunContext(work / "job"))
    finally:
        sys.setprofile(None)
        shutil.rmtree(work, ignore_errors=True)
    return files


def counts(files: list[str]) -> tuple[list[str], int, Counter]:
    """The stays (consecutive calls in one file, as one), how many are returns, and returns by file."""
    stays = [file for position, file in enumerate(files) if position == 0 or files[position - 1] != file]
    seen: set[str] = set()
    returns: Counter = Counter()
    for file in stays:
        if file in seen:
            returns[file] += 1
        seen.add(file)
    return stays, sum(returns.values()), returns


def main() -> None:
    overrides = [arg for arg in sys.argv[1:] if arg != "--smallest"]
    with tempfile.TemporaryDirectory(prefix="ragsweep-walk-data-") as data:
        if "--smallest" in sys.argv[1:]:
            from smallest import chroma_general

            overrides = ["dataset=chroma_general", f"paths.data={chroma_general(Path(data))}", *overrides]
        files = walk(overrides)
    stays, returned, by_file = counts(files)
    print(f"{len(files)} calls handed the config, {len(stays)} stays in {len(set(stays))} files, "
          f"{returned} returns to a file it had left")
    for file, times in by_file.most_common(8):
        print(f"  {times:3d} returns to {file}")
    print(f"config_walk calls={len(files)} stays={len(stays)} files={len(set(stays))} returns={returned}")


if __name__ == "__main__":
    main()
