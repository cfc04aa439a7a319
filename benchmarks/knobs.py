"""What the knobs teams turn do (issue 50): each new stage's effect against its `none`, with paired intervals.

Two grids, each run as `python sweep.py -m ...` from an empty folder (its own MLflow store and outputs; the stage
cache is --cache, shared), then `ragsweep effects --metric M` for each metric (each factor's main effect on the
per-question values, with a paired bootstrap interval):
  chroma  chroma_general (472 questions), generator=extractive, bm25, k=5:
          augment=none,neighbours,parent x cutoff=none,margin x compress=none,sentences (12 jobs)
  sotu    sotu_qa (68 questions), SmolLM2 answering in process (generator=llama_cpp), bm25, k=3:
          query=none,hyde x augment=none,neighbours (4 jobs), HyDE's model llama_cpp too
  lists   the same, with the rewriters that write lists (SmolLM2 through llama.cpp's JSON grammar):
          query=none,multi_query,decompose (3 jobs)
  (sotu and lists run from a copy of conf/ whose rewriters default to llama_cpp, as they were measured:
  estimate.llama_rewriters; a grid holding query=none cannot name query/generator on the command line)
  rewriters  sotu_qa, generator=extractive, bm25, k=3, every rewriter on its default model, the default install's
          (SmolLM2 through transformers, JSON held by llguidance): query=none,multi_query,decompose,hyde (4 jobs);
          also prints each job's share of valid rewrites and texts searched a question
  threshold  chroma_general, generator=extractive, dense retrieval (MiniLM, cosine scores), k=5:
          cutoff=threshold cutoff.min_score=-1,0.3,0.5 (3 jobs; -1 passes every hit, as cutoff=none does)
Metrics: token_iou, token_recall, answer_f1, cost_per_question (prices.cpu_second=0.0001: the machine's time),
context_passages (the passages passed on).
Prints each sweep's wall time, each effects table and the provenance line (machine, date, commit).

`--smallest` (what `make test` runs): one grid, `smallest` (augment=none,neighbours under the chroma grid's
settings, k=3, on benchmarks/smallest.py's short addresses), its token_iou effects, a stage cache of its own.

Usage: python benchmarks/knobs.py [--grids chroma sotu lists rewriters threshold] [--data DIR] [--cache DIR] [--smallest]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from racing import provenance

ROOT = Path(__file__).resolve().parents[1]
GRIDS = {
    "chroma": ["dataset=chroma_general", "generator=extractive", "retriever=bm25", "k=5",
               "augment=none,neighbours,parent", "cutoff=none,margin", "compress=none,sentences"],
    "sotu": ["dataset=sotu_qa", "generator=llama_cpp", "retriever=bm25", "k=3", "query=none,hyde",
             "augment=none,neighbours"],
    "lists": ["dataset=sotu_qa", "generator=llama_cpp", "retriever=bm25", "k=3", "query=none,multi_query,decompose"],
    "rewriters": ["dataset=sotu_qa", "generator=extractive", "retriever=bm25", "k=3",
                  "query=none,multi_query,decompose,hyde"],
    "threshold": ["dataset=chroma_general", "generator=extractive", "retriever=dense", "k=5", "cutoff=threshold",
                  "cutoff.min_score=-1,0.3,0.5"],
}
SMALLEST = ["dataset=chroma_general", "generator=extractive", "retriever=bm25", "k=3", "augment=none,neighbours"]
METRICS = ("token_iou", "token_recall", "answer_f1", "cost_per_question", "context_passages")
PRICE = "prices.cpu_second=0.0001"
LLAMA_REWRITERS = ("sotu", "lists")  # measured with the rewriters on llama_cpp (their default until issue 72)


def sweep(grid: str, folder: Path, data: Path, cache: Path) -> float:
    """Run the grid from `folder` (its store and outputs there); its wall seconds."""
    script = ROOT / "sweep.py"
    if grid in LLAMA_REWRITERS:
        from estimate import llama_rewriters

        _, script = llama_rewriters(folder / "llama_rewriters")
    command = [sys.executable, str(script), "-m", *GRIDS.get(grid, SMALLEST), PRICE,
               f"paths.root={folder}",
               f"paths.data={data}", f"cache.dir={cache}", "bootstrap_samples=200"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{grid}: the sweep failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def effects(folder: Path, metric: str) -> str:
    """`ragsweep effects --metric metric` on the folder's store, as printed."""
    done = subprocess.run([sys.executable, "-m", "ragsweep.cli", "effects", "--metric", metric,
                           "--tracking-uri", f"sqlite:///{folder}/mlruns/mlflow.db"],
                          cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else f"(effects failed: {done.stderr.strip()[-500:]})"


def rewrites(folder: Path) -> str:
    """Each job's share of questions whose rewrite was valid (1 - query_failure_rate) and texts searched a question
    (query_texts_mean), from the folder's store; empty for a grid without rewriters."""
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{folder}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"])
    if "metrics.query_failure_rate" not in runs:
        return ""
    rows = runs[runs["tags.ragsweep.role"] == "job"].dropna(subset=["metrics.query_failure_rate"])
    return "\n".join(["| job | valid rewrites | texts searched a question |", "|---|---|---|"] + [
        f"| {row['tags.mlflow.runName']} | {1 - row['metrics.query_failure_rate']:.3f} | "
        f"{row.get('metrics.query_texts_mean', float('nan')):.2f} |" for _, row in rows.iterrows()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", nargs="+", choices=list(GRIDS), default=None, help="default: all")
    parser.add_argument("--data", type=Path, default=None, help="paths.data (default ../shared/data)")
    parser.add_argument("--cache", type=Path, default=None, help="the stage cache (default .cache/ragsweep)")
    parser.add_argument("--smallest", action="store_true", help="one tiny grid, one metric (make test runs it)")
    args = parser.parse_args()
    metrics = METRICS
    with tempfile.TemporaryDirectory(prefix="ragsweep-knobs-smallest-") as made:
        if args.smallest:
            from smallest import chroma_general

            args.data = args.data or chroma_general(Path(made))
            args.cache, args.grids = args.cache or Path(made) / "cache", args.grids or ["smallest"]
            metrics = METRICS[:1]
        args.data = (args.data or ROOT.parent / "shared" / "data").resolve()
        args.cache = (args.cache or ROOT / ".cache" / "ragsweep").resolve()
        for grid in args.grids or list(GRIDS):
            with tempfile.TemporaryDirectory(prefix=f"ragsweep-knobs-{grid}-") as scratch:
                folder = Path(scratch)
                seconds = sweep(grid, folder, args.data, args.cache)
                print(f"## {grid}: python sweep.py -m {' '.join(GRIDS.get(grid, SMALLEST))} {PRICE} "
                      f"({seconds / 60:.1f} min)\n")
                for metric in metrics:
                    print(f"### {metric}\n\n{effects(folder, metric)}\n", flush=True)
                if table := rewrites(folder):
                    print(f"### rewrites\n\n{table}\n", flush=True)
    print(provenance())


if __name__ == "__main__":
    main()
