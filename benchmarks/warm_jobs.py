"""What a warm configuration costs, with and without freezing the loaded heap out of the garbage collector.

Each side is a fresh process on chroma_general (minilm, recursive 200-token chunks) over one stage cache
(the first side's first job embeds the corpus): a first job loads the models, one job per store warms it,
then 24 warm jobs (stores numpy, chroma, qdrant x k 1, 3, 5, 10, twice) run through the real runner, MLflow
included, each composed by Hydra first as a multirun's jobs are; the compose is not timed (see
`warm_breakdown.py`). `off` replaces the runner's one-time `gc.freeze` with nothing. The sides alternate
(off, on, off, on) so a drift of the machine's speed falls on both. Prints each side's mean and
slowest seconds per warm configuration and, last, `warm_on_over_off=X`.

`--smallest` (what `make test` runs): one round, 3 warm jobs a side (k=1, once) on benchmarks/smallest.py's short
addresses.

Usage: python benchmarks/warm_jobs.py [--data ../shared/data] [--rounds 2] [--smallest]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def side(freeze: bool, data: Path, cache: Path, smallest: bool = False) -> list[float]:
    import ragsweep  # noqa: F401  (offline defaults)
    from hydra import compose, initialize_config_dir

    import ragsweep.runner.run as runner
    from ragsweep.runner.plan import plan_job

    if not freeze:
        runner._freeze_loaded_heap = lambda computed: None
    work = Path(tempfile.mkdtemp(prefix="ragsweep-warm-"))

    def job(label: str, *overrides: str) -> float:
        with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
            cfg = compose("config", overrides=["dataset=chroma_general", f"paths.data={data}", "embedder.progress=false",
                                               "experiment=warm", f"paths.root={work}", f"paths.cache={cache}",
                                               "+force=true", *overrides])
            started = time.perf_counter()
            runner.run(plan_job(cfg), runner.RunContext(work / label))
            return time.perf_counter() - started

    job("cold", "k=5")
    for store in ("chroma", "qdrant"):
        job(f"index-{store}", f"store={store}", "k=5")
    repeats, ks = (1, (1,)) if smallest else (2, (1, 3, 5, 10))
    try:
        return [job(f"{store}-{k}-{r}", f"store={store}", f"k={k}")
                for r in range(repeats) for store in ("numpy", "chroma", "qdrant") for k in ks]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="paths.data (default ../shared/data)")
    parser.add_argument("--rounds", type=int, default=None, help="off/on pairs (default 2; 1 with --smallest)")
    parser.add_argument("--smallest", action="store_true", help="3 warm jobs a side on tiny data (make test runs it)")
    parser.add_argument("--side", choices=["on", "off"], help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(side(args.side == "on", args.data.resolve(), args.cache, args.smallest)))
        return
    cache = Path(tempfile.mkdtemp(prefix="ragsweep-warm-cache-"))  # embedded by the first side, read by the rest
    made = Path(tempfile.mkdtemp(prefix="ragsweep-warm-data-")) if args.data is None and args.smallest else None
    if made is not None:
        from smallest import chroma_general

        args.data = chroma_general(made)
    elif args.data is None:
        args.data = ROOT.parent / "shared" / "data"
    means = {"off": [], "on": []}
    print("| side | mean s per warm configuration | slowest |")
    print("|---|---:|---:|")
    try:
        for _ in range(args.rounds or (1 if args.smallest else 2)):
            for name in ("off", "on"):
                done = subprocess.run([sys.executable, __file__, "--side", name, "--data", str(args.data),
                                       "--cache", str(cache), *(["--smallest"] if args.smallest else [])],
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    raise SystemExit(f"the {name} side failed ({done.returncode}):\n{done.stderr[-3000:]}")
                seconds = json.loads(done.stdout.strip().splitlines()[-1])
                means[name].append(sum(seconds) / len(seconds))
                print(f"| gc.freeze {name} | {means[name][-1]:.3f} | {max(seconds):.3f} |")
    finally:
        for folder in (cache, made):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
    print(f"warm_on_over_off={sum(means['on']) / sum(means['off']):.2f}")

if __name__ == "__main__":
    main()
