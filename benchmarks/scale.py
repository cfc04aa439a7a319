"""What does each stage cost as a corpus grows from thousands of chunks to a million?

The corpus is chroma_general (5 corpora, 472 questions with span references) plus N distractor documents
made at run time, never committed: each holds 40 sentences drawn (seeded) from the five corpora, leaving
out every sentence that overlaps a reference span or repeats one of a reference's sentences, so a
distractor never holds an answer. Written in ragsweep's own format (documents/*.txt, queries.jsonl).

One size given (`--docs 100000`) runs a tenth of it too, for the growth exponents. For each size, each
configuration runs as a real `python sweep.py` process, from its own cold stage cache
(recursive 200-token chunks, k=5):
  bm25              retriever=bm25
  static/numpy      retriever=dense embedder=static store=numpy     (likewise store=chroma, store=qdrant)
  minilm/numpy      retriever=dense embedder=minilm store=numpy     (once: at the smallest size, or at 1,000
                    distractors when that is larger; its encode rate estimates the rest)
and the script prints, per configuration and size, each stage's seconds (the run's `seconds_*` metrics:
load, chunk, embed, index, search, rerank, score, write; `rest` is the process's wall time left over: start,
config, MLflow), its peak RSS (the process's, from wait4) beside a dense configuration's memory target
(2.5 x its float32 embeddings + 1 GB), its retrieval metrics, and then each stage's growth
exponent between consecutive sizes (the log-log slope against the chunk count; stages under 0.5 s at either
size are left out as noise). The last line is `slope_max=S peak_rss_gb=R wall_s=W` for the largest size.

With `--spread`, each size's static embedding (or, `--spread minilm/numpy`, minilm's, where it ran) is also
run as a sweep of that one configuration on two joblib workers from a cold cache: the idle worker runs an
embedding helper (`ragsweep.runner.embedding_helpers`), and the job and the helper take the `cache.embedding_shard`
shards in turn. `spread_embed_ratio` is the job's embedding (its `seconds_embedding`, waiting for the helper's
shards included) over the same configuration's embedding alone.

`--smallest` (what `make test` runs): benchmarks/smallest.py's three short addresses with 1 and 2 distractors,
static/numpy alone, and its spread on two workers at the larger size, unless --docs, --configs or --spread say
otherwise.

Usage: python benchmarks/scale.py [--docs 1000 10000 100000] [--configs bm25 static/numpy ...] [--spread [CONFIG]]
                                  [--data ../shared/data/chroma_general] [--workdir DIR] [--keep] [--smallest]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SENTENCES_PER_DOCUMENT = 40
SEED = 13
COMMON = ["chunker=recursive", "chunker.size=200", "chunker.overlap=0", "k=5", "bootstrap_samples=200"]
CONFIGS = {
    "bm25": ["retriever=bm25"],
    "static/numpy": ["retriever=dense", "embedder=static", "store=numpy"],
    "static/chroma": ["retriever=dense", "embedder=static", "store=chroma"],
    "static/qdrant": ["retriever=dense", "embedder=static", "store=qdrant"],
    "minilm/numpy": ["retriever=dense", "embedder=minilm", "store=numpy"],
}
SMALLEST_ONLY = {"minilm/numpy"}  # run at the smallest size, at most SMALLEST_CAP distractors (its rate estimates the rest)
SMALLEST_CAP = 1000
STAGES = {"load": "loading", "chunk": "chunking", "embed": "embedding", "index": "index", "search": "search",
          "rerank": "rerank", "score": "scoring", "write": "writing"}
DIMENSIONS = {"static": 64, "minilm": 384}  # each embedder's float32 vector length, for the memory target


def rss_target_gb(name: str, chunks: int) -> float | None:
    """The issue's memory bound for a dense configuration: 2.5 x its float32 embeddings + 1 GB (None for bm25)."""
    dimension = DIMENSIONS.get(name.split("/")[0])
    return None if dimension is None else 2.5 * chunks * dimension * 4 / 2**30 + 1


METRICS = ("recall", "token_recall", "token_iou", "chunk_recall", "mrr", "ndcg")
SENTENCE = re.compile(r"\S.*?(?:[.!?](?=\s)|\Z)", re.S)  # up to a full stop before white space


def distractor_pool(corpora: dict[str, str], references: dict[str, list[tuple[int, int]]],
                    reference_texts: list[str]) -> list[str]:
    """Every sentence of the corpora that overlaps no reference span and repeats no sentence of a reference."""
    answers = {match.group().strip() for text in reference_texts for match in SENTENCE.finditer(text)}
    pool = []
    for corpus_id, text in corpora.items():
        spans = sorted(references.get(corpus_id, []))
        for match in SENTENCE.finditer(text):
            start, end = match.span()
            sentence = match.group().strip()
            if len(sentence) < 20 or sentence in answers:
                continue
            if any(s < end and start < e for s, e in spans):
                continue
            pool.append(sentence)
    return pool


def make_corpus(data: Path, folder: Path, documents: int, extra: Path | None = None) -> dict[str, int]:
    """chroma_general plus `documents` distractors in ragsweep's own format; returns its counts. `extra`: more
    questions on chroma_general's corpora (lines of {"id", "question", "corpus", "references"}, as
    benchmarks/data/relevance_heldout.jsonl), added to its 472 and kept out of the distractors like them."""
    from ragsweep.data.chroma_general import ChromaGeneralDataset

    dataset = ChromaGeneralDataset(str(data)).load()
    corpora = {doc_id: document.text for doc_id, document in dataset.documents.items()}
    questions = [{"id": query.id, "question": query.text, "corpus": query.corpus,
                  "references": [ref.to_dict() for ref in query.references]} for query in dataset.queries]
    questions += [json.loads(line) for line in extra.read_text(encoding="utf-8").splitlines()] if extra else []
    references: dict[str, list[tuple[int, int]]] = {}
    for query in questions:
        for ref in query["references"]:
            references.setdefault(ref["doc_id"], []).append((ref["start"], ref["end"]))
    texts = [corpora[ref["doc_id"]][ref["start"] : ref["end"]] for query in questions for ref in query["references"]]
    pool = distractor_pool(corpora, references, texts)
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "documents").mkdir(parents=True)
    for doc_id, text in corpora.items():
        (folder / "documents" / f"{doc_id}.txt").write_text(text, encoding="utf-8", newline="")
    rng = random.Random(SEED)
    characters = sum(len(text) for text in corpora.values())
    for number in range(documents):
        text = " ".join(rng.choices(pool, k=SENTENCES_PER_DOCUMENT))
        characters += len(text)
        (folder / "documents" / f"distractor-{number:07d}.txt").write_text(text, encoding="utf-8", newline="")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as out:
        for query in questions:
            refs = [{"doc_id": ref["doc_id"], "start": ref["start"], "end": ref["end"],
                     "content": corpora[ref["doc_id"]][ref["start"] : ref["end"]]} for ref in query["references"]]
            out.write(json.dumps({"id": query["id"], "question": query["question"], "references": refs,
                                  "corpus": query["corpus"]}) + "\n")
    return {"documents": len(corpora) + documents, "characters": characters, "pool": len(pool),
            "questions": len(questions)}


def sweep_command(corpus: Path, home: Path, *overrides: str) -> list[str]:
    """`python sweep.py` on the corpus, its store, cache and outputs under `home`, with the shared settings."""
    return [sys.executable, str(ROOT / "sweep.py"), *overrides, "dataset=native", f"dataset.path={corpus}",
            f"paths.root={home}", "experiment=scale", *COMMON]


def run_config(corpus: Path, workdir: Path, name: str, overrides: list[str]) -> dict:
    """One configuration as a real `sweep.py` process on an empty stage cache: its metrics, wall and peak RSS."""
    home = workdir / name.replace("/", "-")
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    run_dir = home / "run"
    command = sweep_command(corpus, home, f"hydra.run.dir={run_dir}", *overrides)
    started = time.perf_counter()
    with open(home / "log.txt", "w") as log:
        process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        tail = (home / "log.txt").read_text(errors="replace").splitlines()[-5:]
        raise SystemExit(f"{name} failed (exit {os.waitstatus_to_exitcode(status)}); {home / 'log.txt'} ends:\n"
                         + "\n".join(tail))
    metrics = json.loads((run_dir / "mlflow_run.json").read_text())["metrics"]
    seconds = {stage: metrics.get(f"seconds_{key}", 0.0) for stage, key in STAGES.items()}
    seconds["rest"] = max(wall - sum(seconds.values()), 0.0)
    return {"wall": wall, "rss_gb": usage.ru_maxrss / 2**20, "chunks": int(metrics["n_chunks"]), "seconds": seconds,
            "metrics": {name: metrics.get(name, math.nan) for name in METRICS},
            "embedded": metrics.get("cache_misses_embeddings", 0.0)}


def run_spread(corpus: Path, workdir: Path, name: str, alone: dict) -> dict:
    """Configuration `name` as a one-job sweep on two joblib workers, the second running its embedding helper, from
    a cold cache, against the same configuration embedding alone (`alone`, its own run)."""
    home = workdir / "spread"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    command = sweep_command(corpus, home, "-m", f"hydra.sweep.dir={home / 'sweep'}", *CONFIGS[name],
                            "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                            f"cache.embedding_shard={spread_shard(alone['chunks'])}")
    started = time.perf_counter()
    with open(home / "log.txt", "w") as log:
        code = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
    if code != 0:
        raise SystemExit(f"the spread embedding failed (exit {code}); see {home / 'log.txt'}")
    job = next((home / "sweep").glob("*/mlflow_run.json"), None)
    helper = next((home / "sweep").glob("*/embedding_helper.json"), None)
    if job is None or helper is None:
        raise SystemExit(f"the spread embedding left no run or no helper record; see {home / 'log.txt'}")
    metrics = json.loads(job.read_text())["metrics"]
    embed = metrics.get("seconds_embedding", 0.0)
    return {"wall": time.perf_counter() - started, "embed": embed, "embed_alone": alone["seconds"]["embed"],
            "ratio": embed / alone["seconds"]["embed"],
            "embedded": [metrics.get("cache_misses_embeddings", 0.0), json.loads(helper.read_text())["embedded"]]}


def spread_shard(chunks: int) -> int:
    """The shard size for a spread embedding: the default 8192, smaller on a small corpus (an eighth of it, at
    least 256), so that two workers have shards to split (minilm's corpus is the smallest)."""
    return min(8192, max(256, chunks // 8))


def slope(a: float, b: float, n_a: int, n_b: int) -> float | None:
    """log(b / a) / log(n_b / n_a): 1 is linear growth; None when either time is under 0.5 s."""
    if a < 0.5 or b < 0.5 or n_a == n_b:
        return None
    return math.log(b / a) / math.log(n_b / n_a)


def report(results: dict[str, dict[int, dict]], corpora: dict[int, dict]) -> None:
    columns = [*STAGES, "rest"]
    print("\n| config | distractors | documents | chunks | " + " | ".join(f"{c} s" for c in columns)
          + " | wall s | peak RSS GB | RSS target GB | " + " | ".join(METRICS) + " |")
    print("|" + "---|" * (7 + len(columns) + len(METRICS)))
    for name, sizes in results.items():
        for size, result in sizes.items():
            print(f"| {name} | {size} | {corpora[size]['documents']} | {result['chunks']} | "
                  + " | ".join(f"{result['seconds'][c]:.1f}" for c in columns)
                  + f" | {result['wall']:.1f} | {result['rss_gb']:.2f} | {_target(name, result['chunks'])} | "
                  + " | ".join(f"{result['metrics'][m]:.4f}" for m in METRICS) + " |")
    print("\nGrowth exponents (log-log slope of seconds against chunks; - where a stage took under 0.5 s):")
    print("| config | sizes | " + " | ".join(columns) + " | wall |")
    print("|" + "---|" * (3 + len(columns)))
    worst = []
    for name, sizes in results.items():
        ordered = sorted(sizes.items())
        for (small, a), (large, b) in zip(ordered, ordered[1:]):
            found = {c: slope(a["seconds"][c], b["seconds"][c], a["chunks"], b["chunks"]) for c in columns}
            found["wall"] = slope(a["wall"], b["wall"], a["chunks"], b["chunks"])
            worst += [v for c, v in found.items() if v is not None and c not in ("rest", "wall")]
            print(f"| {name} | {small} → {large} | "
                  + " | ".join("-" if found[c] is None else f"{found[c]:.2f}" for c in [*columns, "wall"]) + " |")
    largest = max(size for sizes in results.values() for size in sizes)
    at_largest = [sizes[largest] for sizes in results.values() if largest in sizes]
    print(f"slope_max={max(worst) if worst else math.nan:.2f} "
          f"peak_rss_gb={max(r['rss_gb'] for r in at_largest):.2f} wall_s={max(r['wall'] for r in at_largest):.1f}")


def _target(name: str, chunks: int) -> str:
    target = rss_target_gb(name, chunks)
    return "-" if target is None else f"{target:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, nargs="+", default=None,
                        help="distractor documents, one size each (default 1000 10000 100000)")
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=None, help="default: all")
    parser.add_argument("--data", type=Path, default=None, help="default ../shared/data/chroma_general")
    parser.add_argument("--workdir", type=Path, help="where corpora, caches and runs go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--spread", nargs="?", const="static/numpy", choices=["static/numpy", "minilm/numpy"],
                        help="also embed each size's corpus by two joblib workers sharing its shards, against the "
                             "configuration alone (default static/numpy)")
    parser.add_argument("--smallest", action="store_true", help="tiny corpora, one configuration (make test runs it)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ragsweep-scale-"))
    if args.smallest:
        from smallest import chroma_general

        args.data = args.data or chroma_general(workdir / "smallest") / "chroma_general"
        args.docs, args.configs = args.docs or [2], args.configs or ["static/numpy"]
        args.spread = args.spread or "static/numpy"
    args.data = args.data or ROOT.parent / "shared" / "data" / "chroma_general"
    args.docs, args.configs = args.docs or [1000, 10000, 100000], args.configs or list(CONFIGS)
    requested = sorted(set(args.docs))
    if len(requested) == 1:  # a growth exponent needs two sizes: a tenth of the one asked for is the other
        requested.insert(0, max(requested[0] // 10, 1))
    smallest = min(requested[0], SMALLEST_CAP)
    sizes = sorted({*requested, smallest}) if any(name in SMALLEST_ONLY for name in args.configs) else requested
    results: dict[str, dict[int, dict]] = {name: {} for name in args.configs}
    corpora, spreads = {}, {}
    try:
        for size in sizes:
            corpus = workdir / f"corpus-{size}"
            started = time.perf_counter()
            corpora[size] = make_corpus(args.data, corpus, size)
            print(f"{size} distractors: {corpora[size]['documents']} documents, {corpora[size]['characters'] / 1e6:.1f} M "
                  f"characters, made in {time.perf_counter() - started:.0f} s", flush=True)
            for name in args.configs:
                if (size != smallest) if name in SMALLEST_ONLY else (size not in requested):
                    continue
                result = results[name][size] = run_config(corpus, workdir / f"runs-{size}", name, CONFIGS[name])
                print(f"  {name}: {result['chunks']} chunks, {result['wall']:.1f} s, {result['rss_gb']:.2f} GB, "
                      + " ".join(f"{stage}={s:.1f}" for stage, s in result["seconds"].items() if s >= 0.05)
                      + f", recall={result['metrics']['recall']:.4f}", flush=True)
                if name == "minilm/numpy" and result["seconds"]["embed"] > 0:
                    rate = result["embedded"] / result["seconds"]["embed"]
                    print(f"  minilm encodes {rate:.0f} texts/s here: {1e6 / rate / 60:.0f} min for 1 M chunks", flush=True)
            spread_here = size in results.get(args.spread, {}) and not (args.smallest and size != sizes[-1])
            if args.spread and spread_here:
                spread = spreads[size] = run_spread(corpus, workdir / f"runs-{size}", args.spread,
                                                    results[args.spread][size])
                print(f"  {args.spread} embedding by 2 workers: {spread['embed']:.1f} s against {spread['embed_alone']:.1f} s "
                      f"alone (ratio {spread['ratio']:.2f}); texts embedded by the job and its helper: {spread['embedded']}", flush=True)
            if not args.keep:
                shutil.rmtree(workdir / f"runs-{size}", ignore_errors=True)
        report({name: sizes_ for name, sizes_ in results.items() if sizes_}, corpora)
        for size, spread in spreads.items():
            print(f"spread_embed_ratio={spread['ratio']:.2f} for {args.spread} at {size} distractors "
                  f"({spread['embed']:.1f} s by 2 workers, {spread['embed_alone']:.1f} s by 1)")
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
