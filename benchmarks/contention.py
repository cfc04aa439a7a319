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

Staggered (`--staggered`): two real sweeps from two project folders (each its own `paths.root`: stage cache,
MLflow store, outputs), as two clones would run them. A generates (`generator=llama_cpp k=3` on the first
`--questions` sotu_qa questions, its first stage cached beforehand); B starts `--delay` seconds later and embeds
chroma_general from an empty cache (`chunker.size=100`, MiniLM, no generator). Each runs alone first, then
both staggered. A's slowdown is its seconds per answer (`seconds_generation` / answers generated), B's its
`seconds_embedding`, staggered over alone; the share of A's generation that B's embedding overlapped is printed
beside them (each stage's window from its run's start, end and logged stage seconds), and A's seconds per answer
over the answers it made wholly while B embedded (from its latency.json). Prints, last,
`staggered_generation_slowdown=X staggered_embedding_slowdown=Y overlap=Z`, X over those answers: the issue's bar
is <= 2.5 each.

Beside the tests (`--beside-tests`): sweep A as above, alone and then started `--delay` seconds after `python -m
pytest -n 2` (make test's command) on the files of `BESIDE_TESTS`, which run every option's sweep and the judges
and embedders in its two workers; the tests are stopped once A ends. Prints A's seconds per answer alone and beside
them and, last, `beside_tests_generation_slowdown=X tests_ran_throughout=True|False` (False: the tests ended
before A did, and X understates): the issue's bar is X <= 2.5.

`--smallest` (what `make test` runs, with each of the three): 1 question (2 for the sweeps, A's on bm25), 16
passages encoded, a 2 s delay; B embeds benchmarks/smallest.py's short addresses, and beside the tests means beside
one quick test (`SMALLEST_TESTS`).

Usage: python benchmarks/contention.py [--questions 20] [--budget 300] [--smallest]
       python benchmarks/contention.py --staggered [--questions 68] [--delay 20] [--shared ../shared/data] [--smallest]
       python benchmarks/contention.py --beside-tests [--questions 68] [--delay 20] [--shared ../shared/data]
                                       [--smallest]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def worker(questions: int, budget: float, encoded: int = 256) -> dict:
    import ragsweep  # noqa: F401  (offline defaults)
    from ragsweep.data.sotu_qa import SotuQADataset
    from ragsweep.embedding.minilm import MiniLMEmbedder
    from ragsweep.generation.base import Request
    from ragsweep.generation.llama_cpp import LlamaCppGenerator
    from ragsweep.generation.prompts import load_prompt

    dataset = SotuQADataset().load()
    embedder = MiniLMEmbedder(progress=False)
    passages = [document.text[i:i + 600] for document in dataset.documents.values()
                for i in range(0, len(document.text), 600)][:encoded]
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


def scenario(workers: int, policy: str | None, questions: int, budget: float, encoded: int = 256) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    command = [sys.executable, __file__, "--worker", "--questions", str(questions), "--budget", str(budget),
               "--encoded", str(encoded)]
    processes = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in range(workers)]
    return [json.loads(process.communicate()[0].strip().splitlines()[-1]) for process in processes]


GENERATES = ["generator=llama_cpp", "k=3"]  # sweep A, after its first stage is cached with generator=none
EMBEDS = ["dataset=chroma_general", "chunker.size=100", "generator=none", "k=3"]  # sweep B, from an empty cache
AFTER_GENERATION = ("judging", "relevance", "scoring", "writing")  # stages a run times after it generates
BESIDE_TESTS = ["tests/test_option_numbers.py", "tests/runner/test_relevance.py", "tests/test_sweep.py", "tests/judging",
                "tests/embedding"]  # models in the workers and in the sweeps they start
SMALLEST_TESTS = ["tests/test_docs.py::test_the_provenance_check_catches_a_table_without_it"]  # --smallest's
SMALLEST_A = ["retriever=bm25"]  # --smallest's sweep A: no embedding of the six addresses


def sweep(folder: Path, overrides: list[str], questions: int, shared: Path) -> subprocess.Popen:
    """`python sweep.py` with its own project folder, as a second clone would run it."""
    command = [sys.executable, str(ROOT / "sweep.py"), *overrides, f"dataset.limit={questions}",
               f"paths.root={folder}", f"paths.data={shared}", "experiment=contention"]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def finished(process: subprocess.Popen, folder: Path) -> dict:
    """The folder's newest run once `process` ends: its wall window and stage seconds."""
    import mlflow

    if process.wait() != 0:
        raise SystemExit(f"a sweep in {folder} failed (exit {process.returncode})")
    client = mlflow.MlflowClient(f"sqlite:///{folder}/mlruns/mlflow.db")
    run = client.search_runs([client.get_experiment_by_name("contention").experiment_id],
                             order_by=["attributes.start_time DESC"], max_results=1)[0]
    latencies = [json.loads(path.read_text()) for path in (folder / "outputs").rglob("latency.json")]
    answers = next((latency["generation_ms"] for latency in latencies if latency.get("generation_ms")), [])
    return {"start": run.info.start_time / 1000, "end": run.info.end_time / 1000, "answer_ms": answers,
            **run.data.metrics}


def generation_window(run: dict) -> tuple[float, float]:
    end = run["end"] - sum(run.get(f"seconds_{stage}", 0.0) for stage in AFTER_GENERATION)
    return end - run["seconds_generation"], end


def embedding_window(run: dict) -> tuple[float, float]:
    start = run["start"] + run.get("seconds_loading", 0.0) + run.get("seconds_chunking", 0.0)
    return start, start + run["seconds_embedding"]


def staggered(questions: int, delay: float, shared: Path, a_extra: Sequence[str] = ()) -> None:
    """A generating (with `a_extra`), B embedding from another folder `delay` s later; each alone first."""
    with tempfile.TemporaryDirectory(prefix="ragsweep-contention-") as scratch:
        folders = {name: Path(scratch) / name for name in ("a_alone", "b_alone", "a", "b")}
        for name in ("a_alone", "a"):  # A's first stage, cached so that A's sweep goes straight to generating
            finished(sweep(folders[name], ["generator=none", "k=3", *a_extra], questions, shared), folders[name])
        alone_a = finished(sweep(folders["a_alone"], [*GENERATES, *a_extra], questions, shared), folders["a_alone"])
        alone_b = finished(sweep(folders["b_alone"], EMBEDS, questions, shared), folders["b_alone"])
        first = sweep(folders["a"], [*GENERATES, *a_extra], questions, shared)
        time.sleep(delay)
        second = sweep(folders["b"], EMBEDS, questions, shared)
        together_a, together_b = finished(first, folders["a"]), finished(second, folders["b"])
    per_answer = {name: run["seconds_generation"] / max(run["cache_misses_answers"], 1)
                  for name, run in (("alone", alone_a), ("staggered", together_a))}
    generating, embedding = generation_window(together_a), embedding_window(together_b)
    overlap = max(0.0, min(generating[1], embedding[1]) - max(generating[0], embedding[0]))
    # answers come one after another in question order: each ends at the generation's start plus the sum so far
    ends = generating[0] + np.cumsum(together_a["answer_ms"]) / 1000
    during = np.asarray(together_a["answer_ms"])[(ends - np.asarray(together_a["answer_ms"]) / 1000 >= embedding[0])
                                                 & (ends <= embedding[1])] / 1000
    per_answer["while B embedded"] = float(during.mean()) if during.size else float("nan")
    print("| sweep | alone | staggered | slowdown |")
    print("|---|---:|---:|---:|")
    print(f"| A: `{' '.join(GENERATES)}`, s per answer ({int(together_a['cache_misses_answers'])} answers) | "
          f"{per_answer['alone']:.2f} | {per_answer['staggered']:.2f} | "
          f"{per_answer['staggered'] / per_answer['alone']:.2f} |")
    print(f"| A while B embedded, s per answer ({during.size} answers) | {per_answer['alone']:.2f} | "
          f"{per_answer['while B embedded']:.2f} | {per_answer['while B embedded'] / per_answer['alone']:.2f} |")
    print(f"| B: `{' '.join(EMBEDS)}`, s embedding | {alone_b['seconds_embedding']:.1f} | "
          f"{together_b['seconds_embedding']:.1f} | {together_b['seconds_embedding'] / alone_b['seconds_embedding']:.2f} |")
    print(f"A generated from {generating[0] - together_a['start']:.0f} to {generating[1] - together_a['start']:.0f} s "
          f"after its run started; B embedded from {embedding[0] - together_a['start']:.0f} to "
          f"{embedding[1] - together_a['start']:.0f} s")
    print(f"staggered_generation_slowdown={per_answer['while B embedded'] / per_answer['alone']:.2f} "
          f"staggered_embedding_slowdown={together_b['seconds_embedding'] / alone_b['seconds_embedding']:.2f} "
          f"overlap={overlap / (generating[1] - generating[0]):.2f}")


def beside_tests(questions: int, delay: float, shared: Path, selected: list[str] = BESIDE_TESTS,
                 a_extra: Sequence[str] = ()) -> None:
    """A generating (with `a_extra`), alone and then `delay` s after `pytest -n 2` on `selected` started; the tests
    stop after A."""
    with tempfile.TemporaryDirectory(prefix="ragsweep-contention-") as scratch:
        folders = {name: Path(scratch) / name for name in ("a_alone", "a")}
        for folder in folders.values():  # A's first stage, cached so that A's sweep goes straight to generating
            finished(sweep(folder, ["generator=none", "k=3", *a_extra], questions, shared), folder)
        alone = finished(sweep(folders["a_alone"], [*GENERATES, *a_extra], questions, shared), folders["a_alone"])
        tests = subprocess.Popen([sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider",
                                  *selected], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
        try:
            time.sleep(delay)
            beside = finished(sweep(folders["a"], [*GENERATES, *a_extra], questions, shared), folders["a"])
            throughout = tests.poll() is None
        finally:
            try:
                os.killpg(tests.pid, signal.SIGTERM)
            except ProcessLookupError:  # the tests ended first (tests_ran_throughout=False)
                pass
            tests.wait()
    per_answer = {name: run["seconds_generation"] / max(run["cache_misses_answers"], 1)
                  for name, run in (("alone", alone), ("beside", beside))}
    print("| sweep | alone | beside `pytest -n 2` | slowdown |")
    print("|---|---:|---:|---:|")
    slowdown = per_answer["beside"] / per_answer["alone"]
    print(f"| A: `{' '.join(GENERATES)}`, s per answer ({int(beside['cache_misses_answers'])} answers) | "
          f"{per_answer['alone']:.2f} | {per_answer['beside']:.2f} | {slowdown:.2f} |")
    print(f"beside_tests_generation_slowdown={slowdown:.2f} tests_ran_throughout={throughout}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=None, help="default 20")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds a worker may generate")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--encoded", type=int, default=256, help=argparse.SUPPRESS)
    parser.add_argument("--staggered", action="store_true", help="two real sweeps from two folders, started apart")
    parser.add_argument("--beside-tests", action="store_true", help="a sweep generating beside `pytest -n 2`")
    parser.add_argument("--delay", type=float, default=None, help="seconds between the two starts (default 20)")
    parser.add_argument("--shared", type=Path, default=None, help="paths.data (chroma_general; default ../shared/data)")
    parser.add_argument("--smallest", action="store_true", help="1 or 2 questions, tiny data (make test runs it)")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.questions, args.budget, args.encoded)))
        return
    sweeps = args.staggered or args.beside_tests
    with tempfile.TemporaryDirectory(prefix="ragsweep-contention-data-") as data:
        if args.smallest:
            args.questions, args.delay = args.questions or (2 if sweeps else 1), args.delay or 2.0
            if args.shared is None and args.staggered:
                from smallest import chroma_general

                args.shared = chroma_general(Path(data))
        args.questions, args.delay = args.questions or 20, args.delay or 20.0
        shared = (args.shared or ROOT.parent / "shared" / "data").resolve()
        a_extra = SMALLEST_A if args.smallest else []
        if args.staggered:
            staggered(args.questions, args.delay, shared, a_extra)
        elif args.beside_tests:
            beside_tests(args.questions, args.delay, shared, SMALLEST_TESTS if args.smallest else BESIDE_TESTS, a_extra)
        else:
            alone_and_together(args.questions, args.budget, 16 if args.smallest else 256)


def alone_and_together(questions: int, budget: float, encoded: int) -> None:
    """The default run: one worker alone, then two together, under each OpenMP wait policy; the table, the ratios."""
    rows, ratios, embedding = [], {}, {}
    for policy in (None, "passive"):
        name = policy or "default"
        alone = scenario(1, policy, questions, budget, encoded)[0]
        together = scenario(2, policy, questions, budget, encoded)
        slowest = max(result["seconds_per_answer"] for result in together)
        ratios[name] = slowest / alone["seconds_per_answer"]
        embedding[name] = alone["embedding_s"]
        rows.append((name, "alone", f"{alone['seconds_per_answer']:.2f}", str(alone["answers"]),
                     f"{alone['embedding_s']:.1f}"))
        for index, result in enumerate(together):
            rows.append((name, f"together #{index + 1}", f"{result['seconds_per_answer']:.2f}", str(result["answers"]),
                         f"{result['embedding_s']:.1f}"))
    print(f"| OpenMP wait policy | scenario | s per answer | answers | MiniLM, {encoded} passages (s) |")
    print("|---|---|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"together_over_alone_default={ratios['default']:.2f} together_over_alone_passive={ratios['passive']:.2f} "
          f"embedding_passive_over_default={embedding['passive'] / embedding['default']:.2f}")


if __name__ == "__main__":
    main()
