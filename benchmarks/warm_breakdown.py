"""Where a warm configuration's time goes: composing it, the runner's own work, and MLflow's calls within it.

In one process, on chroma_general (minilm, recursive 200-token chunks, as `benchmarks/grid.py`'s first
chunker): 12 configurations (stores numpy, chroma, qdrant x k 1, 3, 5, 10) are run once to fill the stage cache
and load the models, then twice warm through the real runner, each pass composed as ragsweep's launcher composes
a multirun's jobs (Hydra once per choice of config groups, here the 3 stores). Prints the warm milliseconds a
configuration for the compose, `plan_job`, the run and the MLflow client calls inside the run, and the compose
of a config holding nothing but Hydra's own groups (the floor of any Hydra job), then, last,
`warm_ms_per_config=X compose_ms=Y hydra_floor_ms=Z mlflow_ms=W`.

`--smallest` (what `make test` runs): k=1 alone (3 configurations) on benchmarks/smallest.py's short addresses.

Usage: python benchmarks/warm_breakdown.py [--data ../shared/data/chroma_general] [--smallest]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

import ragsweep  # noqa: F401  (offline defaults)
from grid import composed_as_launched
from smallest import chroma_general_folder

MLFLOW_CALLS = ("create_run", "log_batch", "log_inputs", "set_terminated", "search_runs", "get_run")


def timed_mlflow_calls(spent: Counter) -> None:
    """Add the seconds each MLflow client call takes to `spent["mlflow"]`."""
    from mlflow.tracking import MlflowClient

    for name in MLFLOW_CALLS:
        call = getattr(MlflowClient, name)

        def wrapper(self, *args, _call=call, **kwargs):
            started = time.perf_counter()
            try:
                return _call(self, *args, **kwargs)
            finally:
                spent["mlflow"] += time.perf_counter() - started

        setattr(MlflowClient, name, wrapper)


def grid(work: Path, data: Path, label: str, spent: Counter, ks: tuple[int, ...] = (1, 3, 5, 10)) -> int:
    """Run the configurations (12: 3 stores x `ks`); add each phase's seconds to `spent`; how many ran."""
    from ragsweep.runner.plan import plan_job
    from ragsweep.runner.run import RunContext, run

    configurations = 0
    with composed_as_launched() as job_config:
        for store in ("numpy", "chroma", "qdrant"):
            for k in ks:
                overrides = ["chunker=recursive", "chunker.size=200", "chunker.overlap=0", f"store={store}",
                             f"k={k}", "dataset=chroma_general", f"dataset.path={data}", f"paths.root={work}",
                             "embedder.progress=false", f"experiment=warm-{label}"]
                started = time.perf_counter()
                config = job_config(overrides)
                composed = time.perf_counter()
                plan = plan_job(config)
                planned = time.perf_counter()
                run(plan, RunContext(work / "outputs" / label / f"{store}_k{k}"))
                spent["compose"] += composed - started
                spent["plan_job"] += planned - composed
                spent["run"] += time.perf_counter() - planned
                configurations += 1
    return configurations


def hydra_floor(folder: Path, repeats: int = 20) -> float:
    """Seconds Hydra takes to compose a config with no groups of its own (Hydra's own groups only)."""
    from hydra import compose, initialize_config_dir

    (folder / "config.yaml").write_text("setting: 1\n")
    with initialize_config_dir(config_dir=str(folder), version_base="1.3"):
        compose("config")
        started = time.perf_counter()
        for _ in range(repeats):
            compose("config")
        return (time.perf_counter() - started) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="default ../shared/data/chroma_general")
    parser.add_argument("--smallest", action="store_true", help="3 configurations on tiny data (make test runs it)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragsweep-warm-breakdown-") as scratch:
        work = Path(scratch)
        data = chroma_general_folder(args.data, args.smallest, work)
        ks = (1,) if args.smallest else (1, 3, 5, 10)
        spent: Counter = Counter()
        timed_mlflow_calls(spent)
        grid(work, data, "cold", Counter(), ks)
        spent.clear()
        configurations = sum(grid(work, data, f"warm{turn}", spent, ks) for turn in range(2))
        (work / "floor").mkdir()
        floor = hydra_floor(work / "floor")
    per = {name: seconds / configurations * 1000 for name, seconds in spent.items()}
    print("| warm configuration | ms |")
    print("|---|---:|")
    for name in ("compose", "plan_job", "run", "mlflow"):
        print(f"| {name + (' (inside run)' if name == 'mlflow' else '')} | {per[name]:.1f} |")
    print(f"| Hydra's compose of a config with no groups | {floor * 1000:.1f} |")
    total = per["compose"] + per["plan_job"] + per["run"]
    print(f"warm_ms_per_config={total:.1f} compose_ms={per['compose']:.1f} hydra_floor_ms={floor * 1000:.1f} "
          f"mlflow_ms={per['mlflow']:.1f}")


if __name__ == "__main__":
    main()
