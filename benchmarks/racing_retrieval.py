"""Does a race save wall time on a team's corpus? Retrieval grids at ~100 k chunks, each in full and raced.

Corpus: benchmarks/scale.py's (chroma_general plus --docs distractor documents, default 10,000: about 103 k chunks
of 200 tokens) with the 135 questions of benchmarks/data/relevance_heldout.jsonl added to chroma_general's 472
(607; their reference sentences are kept out of the distractors like the others'). Four grids, bm25 first,
raced on token_iou:
  reranked  chunker.size=200,400,800 x k=1,3,5,10, reranker=embedding re-scoring its 20 candidates a question with
            MiniLM: a question costs real work (encoding its candidates, cached per text); the sizes far apart.
  wide      the same with chunker.size=100,200,400,800,1600: more chunkings to tell apart, each one's k sharing its
            re-scoring.
  close     chunker.size=150,200,300 x k=3,5, the same reranker on 10 candidates: close competitors.
  cheap     chunker.size=150,200,300 x k=1,3,5,10, no reranker: a question costs almost nothing.
Each grid runs as `python sweep.py -m ...` in full and then with `hydra/sweeper=racing` (its defaults: rounds grown
from the question set), each from an empty folder (paths.root: a cold stage cache and MLflow store), one after
the other in this process's run. Per sweep: wall time; evaluations (configuration x question pairs: the full grid's
per_query.jsonl lines, the race's parent run's count); passages re-scored (the child runs' cache_misses_embeddings,
summed over every round); the winner by token_iou. Last line: `reranked_wall_ratio=A reranked_evaluations_ratio=B
reranked_rescored_ratio=C wide_wall_ratio=... cheap_wall_ratio=D` (race / full). Issue 49's bars: a re-ranked
grid's wall ratio <= 0.45 (docs/benchmarks/racing.md: met by wide, not by reranked, whose winner does a third of
its work), D <= 1.

`--smallest` (what `make test` runs): benchmarks/smallest.py's three short addresses and new questions with 2
distractors, one grid, `smallest` (chunker.size=150,200 x k=1,3, reranker=embedding on 5 candidates).

Usage: python benchmarks/racing_retrieval.py [--docs 10000] [--grids reranked wide close cheap] [--data DIR] [--workdir DIR]
                                             [--smallest]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from racing import SweptRuns, provenance
from scale import make_corpus

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT / "benchmarks" / "data" / "relevance_heldout.jsonl"
COMMON = ["retriever=bm25", "chunker=recursive", "chunker.overlap=0", "optimized_metric=token_iou",
          "bootstrap_samples=200"]
MINILM = "reranker.rescoring_embedder._target_=ragsweep.embedding.minilm.MiniLMEmbedder"
GRIDS = {
    "reranked": ["chunker.size=200,400,800", "k=1,3,5,10", "reranker=embedding", MINILM],
    "wide": ["chunker.size=100,200,400,800,1600", "k=1,3,5,10", "reranker=embedding", MINILM],
    "close": ["chunker.size=150,200,300", "k=3,5", "reranker=embedding", "reranker.candidates=10", MINILM],
    "cheap": ["chunker.size=150,200,300", "k=1,3,5,10"],
}
SMALLEST = ["chunker.size=150,200", "k=1,3", "reranker=embedding", "reranker.candidates=5", MINILM]
SWEEPS = {"full": [], "race": ["hydra/sweeper=racing"]}


@dataclass(frozen=True, slots=True)
class Sweep:
    """One sweep of a grid from an empty folder."""

    seconds: float
    evaluations: int
    rescored: int  # passages encoded by the reranker: cache_misses_embeddings over every child run and round
    winner: str


def run_sweep(grid: str, sweep: str, corpus: Path, folder: Path) -> Sweep:
    """`python sweep.py -m` of the grid (raced or not) on the corpus, with paths.root=folder, then its counts."""
    experiment = f"racing-{grid}-{sweep}"
    overrides = [*COMMON, *GRIDS.get(grid, SMALLEST), *SWEEPS[sweep], "dataset=native", f"dataset.path={corpus}",
                 f"paths.root={folder}", f"experiment={experiment}"]
    started = time.perf_counter()
    with open(folder.parent / f"{grid}-{sweep}.log", "w") as log:
        code = subprocess.run([sys.executable, str(ROOT / "sweep.py"), "-m", *overrides], cwd=ROOT, stdout=log,
                              stderr=subprocess.STDOUT).returncode
    seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"{grid} {sweep} failed (exit {code}); see {folder.parent / f'{grid}-{sweep}.log'}")
    swept = SweptRuns.read(folder, experiment)
    best = swept.winner(sweep == "race", "token_iou")
    params = best.data.params
    return Sweep(seconds, swept.evaluations(sweep == "race"), swept.summed("cache_misses_embeddings"),
                 f"size {params.get('chunker.size', '?')} k={params.get('k', '?')} "
                 f"(token_iou {best.data.metrics.get('token_iou', float('nan')):.4f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=None, help="distractor documents (default 10,000: ~103 k chunks)")
    parser.add_argument("--grids", nargs="+", choices=list(GRIDS), default=None, help="default: reranked cheap")
    parser.add_argument("--data", type=Path, default=None, help="default ../shared/data/chroma_general")
    parser.add_argument("--workdir", type=Path, help="where the corpus and the sweeps go (default: a temporary folder)")
    parser.add_argument("--smallest", action="store_true", help="a tiny corpus and grid (make test runs it)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ragsweep-racing-retrieval-"))
    print(provenance())
    try:
        extra = HELDOUT
        if args.smallest and args.data is None:  # the tiny addresses, with new questions of their own
            from smallest import chroma_general

            made = chroma_general(workdir / "smallest")
            args.data, extra = made / "chroma_general", made / "relevance_heldout.jsonl"
        if args.smallest:
            args.docs, args.grids = args.docs or 2, args.grids or ["smallest"]
        args.data = args.data or ROOT.parent / "shared" / "data" / "chroma_general"
        args.docs, args.grids = args.docs or 10000, args.grids or ["reranked", "cheap"]
        corpus = workdir / "corpus"
        counts = make_corpus(args.data, corpus, args.docs, extra=extra)
        print(f"corpus: {counts['documents']} documents, {counts['characters'] / 1e6:.1f} M characters, "
              f"{counts['questions']} questions", flush=True)
        results: dict[tuple[str, str], Sweep] = {}
        print("| grid | sweep | wall time | evaluations | passages re-scored | winner (token_iou) |")
        print("|---|---|---:|---:|---:|---|")
        for grid in args.grids:
            for sweep in SWEEPS:
                folder = workdir / f"{grid}-{sweep}"
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir(parents=True)
                result = results[grid, sweep] = run_sweep(grid, sweep, corpus, folder)
                print(f"| {grid} | {sweep} | {result.seconds / 60:.1f} min | {result.evaluations} | {result.rescored} "
                      f"| {result.winner} |", flush=True)
        ratios = []
        for grid in args.grids:
            full, race = results[grid, "full"], results[grid, "race"]
            ratios.append(f"{grid}_wall_ratio={race.seconds / full.seconds:.3f}")
            if full.rescored:
                ratios += [f"{grid}_evaluations_ratio={race.evaluations / full.evaluations:.3f}",
                           f"{grid}_rescored_ratio={race.rescored / full.rescored:.3f}"]
        print(" ".join(ratios))
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
