"""Two processes generating on the same cores: how much slower is each than alone?

Each worker is a separate process set up as a sweep's job is (the MiniLM embedder loaded first, so
llama.cpp shares torch's OpenMP runtime as it does in a sweep) and answers the first `--questions`
sotu_qa questions from their reference passages with `generator=llama_cpp` (SmolLM2-135M, greedy,
threads: null, so ragsweep's CoreShare splits the cores among the processes generating). Scenarios,
each under OpenMP's default wait policy and under OMP_WAIT_POLICY=passive (threads sleep instead of
spinning while they wait):
  alone     one worker;
  together  two workers started at once.
A worker stops at `--budget` seconds and reports the answers it finished, so a starved pair cannot run
for an hour. Each worker also times MiniLM encoding 256 passages before generating (what the policy
costs the embedder). Prints a table and, last, `together_over_alone_default=X together_over_alone_passive=Y
embedding_passive_over_default=Z`: the issue's bar is together/alone <= 2.5.

Usage: python benchmarks/contention.py [--questions 20] [--budget 300]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worker(questions: int, budget: float) -> dict:
    import ragsweep  # noqa: F401  (offline defaults)
    from ragsweep.data.sotu_qa import SotuQADataset
    from ragsweep.embedding.minilm import MiniLMEmbedder
    from ragsweep.generation.base import Request
    from ragsweep.generation.llama_cpp import LlamaCppGenerator
    from ragsweep.generation.prompts import load_prompt

    dataset = SotuQADataset().load()
    embedder = MiniLMEmbedder(progress=False)
    passages = [document.text[i:i + 600] for document in dataset.documents.values()
                for i in range(0, len(document.text), 600)][:256]
    embedder.encode(passages[:8])  # load and warm
    started = time.perf_counter()
    embedder.encode(passages)
    embedding_s = time.perf_counter() - started

    prompt = load_prompt("qa")
    generator = LlamaCppGenerator()
    generator.preflight()
    seconds = []
    deadline = time.perf_counter() + budget
    for query in dataset.queries[:questions]:
        texts = tuple(dataset.documents[ref.doc_id].text[max(0, ref.start - 300):ref.end + 300]
                      for ref in query.references)
        made = generator.generate([Request(query.text, texts, prompt.render(query.text, texts))])[0]
        seconds.append(made.latency_ms / 1000)
        if time.perf_counter() > deadline:
            break
    return {"answers": len(seconds), "seconds_per_answer": sum(seconds) / len(seconds), "embedding_s": embedding_s}


def scenario(workers: int, policy: str | None, questions: int, budget: float) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    command = [sys.executable, __file__, "--worker", "--questions", str(questions), "--budget", str(budget)]
    processes = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in range(workers)]
    return [json.loads(process.communicate()[0].strip().splitlines()[-1]) for process in processes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--budget", type=float, default=300.0, help="seconds a worker may generate")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.questions, args.budget)))
        return
    rows, ratios, embedding = [], {}, {}
    for policy in (None, "passive"):
        name = policy or "default"
        alone = scenario(1, policy, args.questions, args.budget)[0]
        together = scenario(2, policy, args.questions, args.budget)
        slowest = max(result["seconds_per_answer"] for result in together)
        ratios[name] = slowest / alone["seconds_per_answer"]
        embedding[name] = alone["embedding_s"]
        rows.append((name, "alone", f"{alone['seconds_per_answer']:.2f}", str(alone["answers"]),
                     f"{alone['embedding_s']:.1f}"))
        for index, result in enumerate(together):
            rows.append((name, f"together #{index + 1}", f"{result['seconds_per_answer']:.2f}", str(result["answers"]),
                         f"{result['embedding_s']:.1f}"))
    print("| OpenMP wait policy | scenario | s per answer | answers | MiniLM, 256 passages (s) |")
    print("|---|---|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"together_over_alone_default={ratios['default']:.2f} together_over_alone_passive={ratios['passive']:.2f} "
          f"embedding_passive_over_default={embedding['passive'] / embedding['default']:.2f}")


if __name__ == "__main__":
    main()
