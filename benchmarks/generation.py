"""Does a grid with a local model pay for each answer and each verdict once?

Runs, in one process, on sotu_qa with generator=llama_cpp (SmolLM2-135M-Instruct, greedy) and
judge=embedding (a cached judge; every judge is cached the same way except lexical, which costs less
than a disk read):
  1. a cold 12-configuration grid (chunkers recursive and sentence x stores numpy, chroma, qdrant
     x k 3, 5) through the real runner, MLflow included, on an empty cache;
  2. the same grid again (warm), as new runs;
  3. the model alone on a fixed prompt: prompt-processing and generation tokens per second.
Checks against an independent count: the distinct prompts are recounted from the jobs' per-query
files (each question with the exact texts of its top-k chunks, in order), and compared with the
generator calls the cold grid made (its `cache_misses_answers`) and the answers on disk; the distinct
(claim, passage) pairs are recounted from the same files (each answer's claims and its top-k chunk
texts) and compared with the judge calls (`cache_misses_verdicts`).
Prints a table and, as its last line, `calls_over_distinct_prompts=X judge_calls_over_distinct_pairs=J
warm_over_cold=Y seconds_per_answer_p50=Z prompt_tokens_per_s=P generation_tokens_per_s=G`.
Seconds per claim of each judge are measured by `benchmarks/judges.py` (docs/benchmarks/judges.md).

`--smallest` (what `make test` runs): 2 configurations (recursive, bm25, k 3 and 5) on sotu_qa's first 3 questions,
answers of at most 16 tokens.

Usage: python benchmarks/generation.py [--workdir DIR] [--smallest]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

import ragsweep  # noqa: F401  (offline defaults)

ROOT = Path(__file__).resolve().parents[1]
CHUNKERS = ["recursive", "sentence"]
STORES = ["numpy", "chroma", "qdrant"]
KS = [3, 5]
SMALLEST = {"chunkers": ["recursive"], "stores": ["numpy"], "ks": KS,  # bm25: no embedding of the six addresses
            "overrides": ["dataset.limit=3", "retriever=bm25", "generator.max_tokens=16"]}
FULL = {"chunkers": CHUNKERS, "stores": STORES, "ks": KS, "overrides": []}


def grid(workdir: Path, label: str, size: dict = FULL) -> float:
    """Seconds for the configurations of `size` (12), run through the runner as a multirun's jobs are."""
    from hydra import compose, initialize_config_dir

    from ragsweep.runner.plan import plan_job
    from ragsweep.runner.run import RunContext, run

    started = time.perf_counter()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        for chunker in size["chunkers"]:
            for store in size["stores"]:
                for k in size["ks"]:
                    overrides = [f"chunker={chunker}", f"store={store}", f"k={k}", "generator=llama_cpp",
                                 "judge=embedding", f"paths.root={workdir}", "embedder.progress=false",
                                 f"experiment=generation-{label}", *size["overrides"]]
                    run(plan_job(compose("config", overrides=overrides)),
                        RunContext(workdir / "outputs" / label / f"{chunker}_{store}_k{k}"))
    return time.perf_counter() - started


def distinct_prompts(workdir: Path, label: str) -> tuple[int, list[float]]:
    """Distinct (question, top-k chunk texts) pairs over the grid's jobs, and each one's generation seconds."""
    from ragsweep.data.sotu_qa import SotuQADataset

    documents = SotuQADataset().load().documents
    seconds: dict[tuple, float] = {}
    for path in sorted((workdir / "outputs" / label).glob("*/per_query.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            texts = tuple(documents[hit["doc_id"]].text[hit["start"]:hit["end"]] for hit in record["retrieved"])
            seconds.setdefault((record["question"], texts), record["generation"]["latency_ms"] / 1000)
    return len(seconds), list(seconds.values())


def distinct_pairs(workdir: Path, label: str) -> int:
    """Distinct judge inputs over the grid's jobs: (claim, chunk text) for every claim of every answer, read from
    the per-query files (relevance is the spans', so the support judge makes no (question, chunk) calls)."""
    from ragsweep.data.sotu_qa import SotuQADataset

    documents = SotuQADataset().load().documents
    pairs = set()
    for path in sorted((workdir / "outputs" / label).glob("*/per_query.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record["answer"] is None:
                continue
            texts = [documents[hit["doc_id"]].text[hit["start"]:hit["end"]] for hit in record["retrieved"]]
            claims = [claim["text"] for claim in record["judged"]["claims"]]
            pairs |= {("support", claim, text) for claim in claims for text in texts}
    return len(pairs)


def calls(workdir: Path, label: str, stage: str, size: dict = FULL) -> int:
    """What the grid's runs computed at a stage (their `cache_misses_<stage>`, summed)."""
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workdir}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=[f"generation-{label}"])
    assert len(runs) == len(size["chunkers"]) * len(size["stores"]) * len(size["ks"]), len(runs)
    return int(runs[f"metrics.cache_misses_{stage}"].sum())


def model_speed() -> tuple[float, float]:
    """Tokens per second of SmolLM2 on this process's share of the machine's cores (all of them on an idle
    machine), taken as ragsweep's generator takes it: a 500-token prompt, then 64 generated tokens."""
    from llama_cpp import Llama

    from ragsweep.cores import model_threads
    from ragsweep.generation.llama_cpp import packaged_model

    with model_threads(None) as threads:
        model = Llama(model_path=str(packaged_model()), n_ctx=2048, n_threads=threads, verbose=False)
        model.create_completion("Hello", max_tokens=1)
        prompt = " ".join(f"word{i % 97}" for i in range(250))
        started = time.perf_counter()
        read = model.create_completion(prompt, max_tokens=1)["usage"]["prompt_tokens"]
        prompt_rate = read / (time.perf_counter() - started)
        model.reset()
        started = time.perf_counter()
        made = model.create_completion("Once upon a time", max_tokens=64, temperature=0, repeat_penalty=1.1)
        generation_rate = made["usage"]["completion_tokens"] / (time.perf_counter() - started)
        model.close()
    return prompt_rate, generation_rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--smallest", action="store_true", help="2 configurations on 3 questions (make test runs it)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ragsweep-generation-"))
    size = SMALLEST if args.smallest else FULL
    configurations = len(size["chunkers"]) * len(size["stores"]) * len(size["ks"])
    cold = grid(workdir, "cold", size)
    warm = grid(workdir, "warm", size)
    distinct, seconds = distinct_prompts(workdir, "cold")
    generated = calls(workdir, "cold", "answers", size)
    on_disk = sum(1 for _ in (workdir / ".cache" / "ragsweep" / "answers").rglob("*.npz"))
    warm_generated = calls(workdir, "warm", "answers", size)
    pairs, judged, warm_judged = distinct_pairs(workdir, "cold"), calls(workdir, "cold", "verdicts", size), \
        calls(workdir, "warm", "verdicts", size)
    prompt_rate, generation_rate = model_speed()
    p50 = float(np.percentile(seconds, 50))
    print(f"{f'cold grid ({configurations} configurations)':<36}{cold:>10.1f} s")
    print(f"{'warm grid (same, new runs)':<36}{warm:>10.1f} s")
    print(f"{'distinct prompts (from per_query)':<36}{distinct:>10d}")
    print(f"{'generator calls, cold grid':<36}{generated:>10d}")
    print(f"{'generator calls, warm grid':<36}{warm_generated:>10d}")
    print(f"{'answers stored in the cache':<36}{on_disk:>10d}")
    print(f"{'distinct judge pairs (per_query)':<36}{pairs:>10d}")
    print(f"{'judge calls, cold / warm grid':<36}{judged:>10d} / {warm_judged}")
    print(f"{'seconds per answer, p50 / p95':<36}{p50:>10.2f} / {np.percentile(seconds, 95):.2f}")
    print(f"{'prompt / generation tokens per s':<36}{prompt_rate:>10.0f} / {generation_rate:.0f}")
    print(f"workdir: {workdir}")
    print(f"calls_over_distinct_prompts={generated / distinct:.3f} "
          f"judge_calls_over_distinct_pairs={judged / pairs:.3f} warm_over_cold={warm / cold:.3f} "
          f"seconds_per_answer_p50={p50:.2f} prompt_tokens_per_s={prompt_rate:.0f} "
          f"generation_tokens_per_s={generation_rate:.0f}")


if __name__ == "__main__":
    main()
