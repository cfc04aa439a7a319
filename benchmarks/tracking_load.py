"""How many concurrent writers can the tracking store take? SQLite (one machine's default) against an
MLflow server on PostgreSQL (a team's, `ragsweep server`).

N writer processes each log M runs shaped like a ragsweep job: ~60 params, ~40 metrics in one batch,
3 artifacts (config, metrics, per-question file), tags, then the run's end. Every process imports
MLflow and waits at a barrier before the clock starts. For each store and N, prints runs per second
(all writers together), the p95 of one run's logging time, and the runs refused (an error after
MLflow's own retries: SQLite's "database is locked"). The last line is machine-readable:
`sqlite_runs_per_s_at_<N>=...  postgres_runs_per_s_at_<N>=...  sqlite_first_refusing_writers=...`.

Needs root and PostgreSQL 15 (started as the postgres user on 127.0.0.1); everything it starts, it stops.
`--smallest` (what `make test` runs): --writers 1,2 --runs 2 --server-workers 1, unless given.
Usage: python benchmarks/tracking_load.py [--writers 1,2,4,8,16,32] [--runs 10] [--server-workers 2] [--smallest]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")

from tests.cluster.services import MlflowServer, Postgres, missing_parts  # noqa: E402

PARAMS = {f"{stage}.{key}": f"value-{i}" for i, (stage, key) in enumerate(
    (stage, key) for stage in ("chunker", "embedder", "store", "retriever", "reranker", "generator")
    for key in ("_target_", "size", "overlap", "model", "batch_size", "threads", "name", "path", "k", "depth"))}
METRICS = [f"metric_{i}" for i in range(40)]


def _artifacts(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {"config.yaml": 2_000, "metrics.json": 8_000, "per_query.jsonl": 150_000}
    for name, size in files.items():
        (folder / name).write_bytes(os.urandom(size // 2).hex().encode())
    return [folder / name for name in files]


def _writer(uri: str, experiment_id: str, runs: int, start, results, files: list[Path]) -> None:
    import mlflow
    from mlflow.entities import Metric, Param

    mlflow.set_tracking_uri(uri)
    client = mlflow.MlflowClient(uri)
    start.wait()
    latencies, refused = [], 0
    for number in range(runs):
        began = time.perf_counter()
        try:
            run = client.create_run(experiment_id, run_name=f"job-{os.getpid()}-{number}",
                                    tags={"ragsweep.role": "job", "ragsweep.config_fingerprint": os.urandom(16).hex()})
            run_id = run.info.run_id
            client.log_batch(run_id, params=[Param(k, v) for k, v in PARAMS.items()])
            stamp = int(time.time() * 1000)
            client.log_batch(run_id, metrics=[Metric(name, float(i), stamp, 0) for i, name in enumerate(METRICS)])
            for path in files:
                client.log_artifact(run_id, str(path))
            client.set_terminated(run_id, "FINISHED")
            latencies.append(time.perf_counter() - began)
        except Exception:  # noqa: BLE001  (a refused write is what is measured)
            refused += 1
    results.put((latencies, refused, time.perf_counter()))


def measure(uri: str, writers: int, runs: int, files: list[Path], experiment: str) -> dict:
    import mlflow

    client = mlflow.MlflowClient(uri)
    experiment_id = client.create_experiment(experiment)
    context = multiprocessing.get_context("fork")
    start, results = context.Barrier(writers + 1), context.Queue()
    processes = [context.Process(target=_writer, args=(uri, experiment_id, runs, start, results, files))
                 for _ in range(writers)]
    for process in processes:
        process.start()
    start.wait()
    began = time.perf_counter()
    outcomes = [results.get(timeout=1800) for _ in processes]
    for process in processes:
        process.join()
    ended = max(outcome[2] for outcome in outcomes)
    latencies = [value for outcome in outcomes for value in outcome[0]]
    return {"writers": writers, "runs_per_s": len(latencies) / (ended - began),
            "p95_s": float(np.percentile(latencies, 95)) if latencies else float("nan"),
            "refused": sum(outcome[1] for outcome in outcomes), "runs": writers * runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", default=None, help="writer counts, one measurement each (default 1,2,4,8,16,32)")
    parser.add_argument("--runs", type=int, default=None, help="runs per writer (default 10)")
    parser.add_argument("--server-workers", type=int, default=None, help="the MLflow server's workers (default 2)")
    parser.add_argument("--smallest", action="store_true", help="2 runs of 1 and 2 writers (make test runs it)")
    args = parser.parse_args()
    if args.smallest:
        args.writers, args.runs, args.server_workers = args.writers or "1,2", args.runs or 2, args.server_workers or 1
    args.writers, args.runs = args.writers or "1,2,4,8,16,32", args.runs or 10
    args.server_workers = args.server_workers or 2
    missing = missing_parts()
    if missing:
        raise SystemExit(f"tracking_load needs {', '.join(missing)}")
    counts = [int(n) for n in args.writers.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="tracking-load-") as tmp:
        tmp = Path(tmp)
        files = _artifacts(tmp / "files")
        sqlite = f"sqlite:///{tmp / 'sqlite' / 'mlflow.db'}"
        (tmp / "sqlite").mkdir()
        import mlflow

        mlflow.MlflowClient(sqlite).search_experiments()  # create the tables before the clock starts
        for writers in counts:
            rows.append({"store": "sqlite", **measure(sqlite, writers, args.runs, files, f"load-{writers}")})
            print(_line(rows[-1]), flush=True)
        with Postgres() as postgres, \
                MlflowServer(postgres.create("mlflow"), tmp / "server", workers=args.server_workers) as server:
            for writers in counts:
                rows.append({"store": f"postgres (server, {args.server_workers} workers)",
                             **measure(server.uri, writers, args.runs, files, f"load-{writers}")})
                print(_line(rows[-1]), flush=True)
    print("\n| store | writers | runs | runs/s | p95 s per run | refused |\n|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['store']} | {row['writers']} | {row['runs']} | {row['runs_per_s']:.1f} | {row['p95_s']:.2f} "
              f"| {row['refused']} |")
    refusing = [row["writers"] for row in rows if row["store"] == "sqlite" and row["refused"]]
    summary = [f"{'sqlite' if row['store'] == 'sqlite' else 'postgres'}_runs_per_s_at_{row['writers']}="
               f"{row['runs_per_s']:.1f}" for row in rows]
    summary.append(f"sqlite_first_refusing_writers={refusing[0] if refusing else 'none'}")
    print(" ".join(summary))


def _line(row: dict) -> str:
    return (f"{row['store']}: {row['writers']} writers x {row['runs'] // row['writers']} runs: "
            f"{row['runs_per_s']:.1f} runs/s, p95 {row['p95_s']:.2f} s, refused {row['refused']}")


if __name__ == "__main__":
    main()
