"""How close does a cached ragsweep grid get to the cost of embedding alone?

Runs, in one process, on chroma_general with the minilm embedder:
  1. a cold 36-config grid (chunkers recursive 200/0, fixed 800/400, fixed 250/125 x stores
     numpy, chroma, qdrant x k 1, 3, 5, 10) through the real runner, MLflow included, on an empty cache;
  2. the same grid again (warm);
  3. the lower bound: one plain SentenceTransformer.encode of the distinct chunk texts and questions,
     measured before and after the grids (the mean is used; the model is loaded outside the timing).
Between phases the process drops the last phase's models and memos and returns freed memory to the
OS (`ragsweep.memo.forget_all`), as a process exiting after each phase would.
Prints a table, each phase's own peak RSS (Linux's high-water mark, restarted between phases),
chroma's agreement with exact search, and as its last line
`cold_over_lower_bound=X warm_over_cold=Y peak_rss_gb=Z`, Z being the process's peak over all phases.

Usage: python benchmarks/grid.py [--data ../shared/data/chroma_general] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from pathlib import Path

import ragsweep  # noqa: F401  (offline defaults)
from ragsweep.memo import forget_all

ROOT = Path(__file__).resolve().parents[1]
CHUNKERS = {
    "recursive 200/0": ["chunker=recursive", "chunker.size=200", "chunker.overlap=0"],
    "fixed 800/400": ["chunker=fixed", "chunker.size=800", "chunker.overlap=400"],
    "fixed 250/125": ["chunker=fixed", "chunker.size=250", "chunker.overlap=125"],
}
STORES = ["numpy", "chroma", "qdrant"]
KS = [1, 3, 5, 10]


def grid(workdir: Path, data: Path, label: str) -> tuple[float, dict[str, float]]:
    from hydra import compose, initialize_config_dir

    from ragsweep.runner.run import run

    per_chunker: dict[str, float] = {}
    started = time.perf_counter()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):  # one loader, as in a multirun
        for name, chunker in CHUNKERS.items():
            chunker_started = time.perf_counter()
            for store in STORES:
                for k in KS:
                    overrides = [*chunker, f"store={store}", f"k={k}", "dataset=chroma_general", f"dataset.path={data}",
                                 f"paths.root={workdir}", "embedder.progress=false", f"experiment=grid-{label}"]
                    cfg = compose("config", overrides=overrides)
                    stem = f"{name.replace(' ', '_').replace('/', '-')}_{store}_k{k}"
                    run(cfg, output_dir=workdir / "outputs" / label / stem)
            per_chunker[name] = time.perf_counter() - chunker_started
    return time.perf_counter() - started, per_chunker


def lower_bound(data: Path) -> tuple[float, int]:
    """Seconds for one plain encode of every distinct text the grid embeds (questions included)."""
    from ragsweep.chunking.fixed import FixedTokenChunker
    from ragsweep.chunking.recursive import RecursiveChunker
    from ragsweep.data.chroma_general import ChromaGeneralDataset
    from ragsweep.embedding.minilm import minilm_path
    from ragsweep.embedding.sentence_transformers import _load

    dataset = ChromaGeneralDataset(str(data)).load()
    chunkers = [RecursiveChunker(200, 0), FixedTokenChunker(800, 400), FixedTokenChunker(250, 125)]
    texts = {chunk.text for chunker in chunkers for doc in dataset.documents.values() for chunk in chunker.split(doc)}
    questions = [query.text for query in dataset.queries]
    model = _load(minilm_path(), os.cpu_count() or 1)  # the plain SentenceTransformer the grid loaded
    started = time.perf_counter()
    model.encode(sorted(texts), batch_size=8, normalize_embeddings=True)  # the batch size the grid uses
    model.encode(questions, batch_size=8, normalize_embeddings=True)
    return time.perf_counter() - started, len(texts) + len(questions)


def chroma_agreement(workdir: Path) -> float:
    """Mean share of exact (numpy) top-10 chunks that chroma also returns, over every chunker's questions."""
    shares = []
    for name in CHUNKERS:
        stem = name.replace(" ", "_").replace("/", "-")
        exact, approx = (workdir / "outputs" / "cold" / f"{stem}_{store}_k10" / "per_query.jsonl" for store in ("numpy", "chroma"))
        for line_exact, line_approx in zip(exact.read_text().splitlines(), approx.read_text().splitlines()):
            spans = [{(r["doc_id"], r["start"], r["end"]) for r in json.loads(line)["retrieved"]} for line in (line_exact, line_approx)]
            shares.append(len(spans[0] & spans[1]) / max(len(spans[0]), 1))
    return sum(shares) / len(shares)


def _phase_peak_gb() -> float:
    """Peak RSS since the last call: the kernel's high-water mark, then restarted at the current RSS."""
    peak = _status_gb("VmHWM")
    Path("/proc/self/clear_refs").write_text("5")
    return peak


def _status_gb(field: str) -> float:
    """A memory figure of this process from /proc/self/status (Linux), in GB."""
    return int(re.search(rf"{field}:\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1)) / 1024**2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "chroma_general")
    parser.add_argument("--workdir", type=Path, default=None, help="kept afterwards when given; a temp dir otherwise")
    args = parser.parse_args()
    import logging

    logging.getLogger().setLevel(logging.WARNING)
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    with tempfile.TemporaryDirectory() as scratch:
        workdir = (args.workdir or Path(scratch)).resolve()
        # The lower bound is measured before and after the grids and averaged, so slow drift of this
        # shared machine's speed during the run does not favour either side.
        _phase_peak_gb()
        start_rss = {"before": _status_gb("VmRSS")}
        bound_before, n_texts = lower_bound(args.data.resolve())
        rss = {"lower bound before": _phase_peak_gb()}
        # Between phases the process lets go of the previous phase's model, memos and freed heap, as
        # separate processes would: the cold grid loads (and pays for) its own model, and neither the
        # plain encode's heap nor the grid's state is counted twice.
        forget_all()
        cold, cold_parts = grid(workdir, args.data.resolve(), "cold")
        rss["cold grid"] = _phase_peak_gb()
        warm, warm_parts = grid(workdir, args.data.resolve(), "warm")
        rss["warm grid"] = _phase_peak_gb()
        forget_all()
        start_rss["after"] = _status_gb("VmRSS")  # the grids' libraries (MLflow, Chroma, Qdrant) stay loaded
        bound_after, _ = lower_bound(args.data.resolve())
        rss["lower bound after"] = _phase_peak_gb()
        bound = (bound_before + bound_after) / 2
        agreement = chroma_agreement(workdir)
    peak_gb = max(rss.values())
    print(f"\n{'phase':<34}{'seconds':>10}")
    for name in CHUNKERS:
        print(f"{'cold  ' + name + ' (12 configs)':<34}{cold_parts[name]:>10.1f}")
    print(f"{'cold grid (36 configs)':<34}{cold:>10.1f}")
    for name in CHUNKERS:
        print(f"{'warm  ' + name + ' (12 configs)':<34}{warm_parts[name]:>10.1f}")
    print(f"{'warm grid (36 configs)':<34}{warm:>10.1f}")
    print(f"{'lower bound before the grids':<34}{bound_before:>10.1f}")
    print(f"{'lower bound after the grids':<34}{bound_after:>10.1f}")
    print(f"{'lower bound: encode ' + str(n_texts) + ' texts':<34}{bound:>10.1f}")
    print("peak RSS of each phase (GB): " + ", ".join(f"{phase} {gb:.2f}" for phase, gb in rss.items()))
    print("RSS as each lower bound starts (GB): " + ", ".join(f"{when} {gb:.2f}" for when, gb in start_rss.items()))
    print(f"chroma top-10 agreement with exact search: {agreement:.4f}")
    print("targets: cold <= 1.15 x lower bound, warm <= 0.05 x cold, peak RSS <= 1.3 GB")
    print(f"cold_over_lower_bound={cold / bound:.3f} warm_over_cold={warm / cold:.3f} peak_rss_gb={peak_gb:.2f}")


if __name__ == "__main__":
    main()
