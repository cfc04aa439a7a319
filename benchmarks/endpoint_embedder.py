"""embedder=openai against the in-process embedder of the same model: passages a second, and a sweep's numbers.

Starts Infinity (from .venv-infinity, `make install-test`) on 127.0.0.1 serving all-MiniLM-L6-v2, then, in one
run: embeds the same passages (chroma_general's chunks at the default chunking, the first --passages) with
embedder=minilm in process and with embedder=openai at concurrency 1, 4 and 8 (no cache: every text sent), and
runs `python sweep.py` on chroma_general with each embedder, reporting the largest difference of their retrieval
metrics. On one machine the server and the client share its cores, so the endpoint cannot be faster than the model
in process here: the ratios measure what the HTTP path costs, not what a GPU server down the hall would give.

The last line is machine-readable: `in_process_per_s=... endpoint_per_s_c1=... endpoint_per_s_c4=...
endpoint_per_s_c8=... c4_over_in_process=... largest_metric_difference=...`.
`--smallest` (what `make test` runs): 32 passages and the tiny chroma_general of benchmarks/smallest.py.
Usage: python benchmarks/endpoint_embedder.py [--passages 2000] [--data DIR] [--smallest]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

from smallest import chroma_general_folder  # noqa: E402
from tests.servers import SERVED, InfinityServer, free_port  # noqa: E402

METRICS = ("recall", "precision", "mrr", "ndcg", "map", "token_recall", "token_iou", "chunk_recall")
CONCURRENCY = (1, 4, 8)


def passages(folder: Path, count: int) -> list[str]:
    """The first `count` chunks of chroma_general's corpora at the default chunking (recursive, 200 tokens)."""
    from ragsweep.chunking.recursive import RecursiveChunker
    from ragsweep.types import Document

    chunker, texts = RecursiveChunker(size=200), []
    for path in sorted((folder / "corpora").glob("*.md")):
        texts += [chunk.text for chunk in chunker.split(Document(path.stem, path.read_text(encoding="utf-8")))]
        if len(texts) >= count:
            break
    return texts[:count]


def per_second(embed, texts: list[str]) -> float:
    embed(texts[:4])  # a first call loads a model or opens connections
    started = time.perf_counter()
    embed(texts)
    return len(texts) / (time.perf_counter() - started)


def sweep_metrics(project: Path, data: Path, *overrides: str) -> dict[str, float]:
    """The retrieval metrics of `python sweep.py` with `overrides` on the chroma_general at `data`."""
    project.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, str(ROOT / "sweep.py"), "dataset=chroma_general", f"dataset.path={data}",
                           "k=5", *overrides, f"paths.root={project}"], cwd=project, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"sweep.py {' '.join(overrides)} failed:\n{done.stderr[-3000:]}")
    metrics = json.loads(next((project / "outputs").rglob("metrics.json")).read_text())
    return {name: metrics[name]["mean"] for name in METRICS if name in metrics}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=2000)
    parser.add_argument("--data", type=Path, help="a chroma_general folder (default: ../shared/data's)")
    parser.add_argument("--smallest", action="store_true", help="32 passages, a tiny chroma_general (make test)")
    args = parser.parse_args()
    from ragsweep.embedding.minilm import MiniLMEmbedder
    from ragsweep.embedding.openai import OpenAIEmbedder

    with tempfile.TemporaryDirectory() as work:
        data = chroma_general_folder(args.data, args.smallest, Path(work))
        texts = passages(data, 32 if args.smallest else args.passages)
        server = InfinityServer(free_port()).start(wait=180)
        try:
            rates = {"in_process": per_second(MiniLMEmbedder(progress=False).encode, texts)}
            for concurrency in CONCURRENCY:
                endpoint = OpenAIEmbedder(server.base_url, SERVED, batch_size=32, concurrency=concurrency,
                                          progress=False)
                rates[f"c{concurrency}"] = per_second(endpoint.encode, texts)
            here = sweep_metrics(Path(work) / "in_process", data, "embedder=minilm")
            served = sweep_metrics(Path(work) / "endpoint", data, "embedder=openai",
                                   f"embedder.base_url={server.base_url}", f"embedder.model={SERVED}")
        finally:
            server.stop()
    print(f"{len(texts)} passages; passages a second: in process {rates['in_process']:.1f}, "
          + ", ".join(f"endpoint at concurrency {c} {rates[f'c{c}']:.1f}" for c in CONCURRENCY))
    for name in METRICS:
        if name in here:
            print(f"  {name}: in process {here[name]:.4f}, endpoint {served[name]:.4f}")
    difference = max(abs(here[name] - served[name]) for name in here)
    print(f"in_process_per_s={rates['in_process']:.1f} "
          + " ".join(f"endpoint_per_s_c{c}={rates[f'c{c}']:.1f}" for c in CONCURRENCY)
          + f" c4_over_in_process={rates['c4'] / rates['in_process']:.2f} largest_metric_difference={difference:.6f}")


if __name__ == "__main__":
    main()
