"""`ragsweep estimate` against the calls, tokens and cost the same sweep then logs (issue 50: within 5%).

From an empty stage cache and an empty folder (its own MLflow store): SmolLM2 answers sotu_qa (68 questions) in
process (generator=llama_cpp, bm25, no query rewriting) at k=3, so the cache holds that model's answers; then the
grid query=none,multi_query x k=3,5 (the rewriter asks the same model) is estimated twice: as it stands (one job
held, three predicted, the rewrites from no held call of theirs: a bound), and with --sample 16 (each job's calls
for 16 questions made first and cached, its other calls scaled by them). Then that grid is run, and each job's
estimated tokens (answers', rewrites') and cost_total (with its 95% interval) are set against what its run logged.
Prices: SmolLM2's tokens at an endpoint's rates (input 0.15, output 0.6 per million) and prices.cpu_second=0.0001.
Prints per job and for the sweep each estimate / logged, the wall times, how often a random sample of n questions
would have brought each new job's completion tokens and cost_total within 5% and how often their 95% intervals would
have held them (200 samples of each size, from the calls the sweep then holds, the k=3 job's as the other jobs'
calls), and the provenance line.

Usage: python benchmarks/estimate.py [--data DIR] [--sample N] [--folder DIR]
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from racing import provenance

ROOT = Path(__file__).resolve().parents[1]
MODEL = "SmolLM2-135M-Instruct.Q4_1"
QUESTIONS = 68
FIXED = ["dataset=sotu_qa", "generator=llama_cpp", "retriever=bm25", "prices.cpu_second=0.0001",
         f"prices.models={{{MODEL}:{{input:0.15,output:0.6}}}}", "bootstrap_samples=200"]
FIRST = ["query=none", "k=3"]
GRID = ["query=none,multi_query", "k=3,5"]
FIGURES = ("answers' prompt tokens", "answers' completion tokens", "rewrites' prompt tokens",
           "rewrites' completion tokens", "cost_total")


def sweep(args: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "sweep.py"), "-m", *args], cwd=ROOT, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise SystemExit(f"the sweep failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def answer_figures(job) -> list:
    """A job's `FIGURES` and its 95% intervals (by figure: none without a sample), from its `JobEstimate`."""
    from ragsweep.runner.estimating import StageCount

    answers, rewrites = job.stages["generation"], job.stages.get("query", StageCount())
    return [answers.prompt_tokens, answers.completion_tokens, rewrites.prompt_tokens, rewrites.completion_tokens,
            job.cost_total, job.intervals]


def estimated(args: list[str], sample: int, figures: Callable = answer_figures) -> tuple[dict[str, list], float]:
    """Each job's `figures` as `ragsweep estimate [--sample N]` predicts them, and its wall time."""
    from ragsweep.runner.entry import conf_dir
    from ragsweep.runner.estimating import SweepEstimator
    from ragsweep.runner.preflight import check_command_line

    started = time.perf_counter()
    estimator = SweepEstimator(sample)
    problems = check_command_line(["-m", *args], conf_dir(ROOT), visit=estimator.visit)
    if problems:
        raise SystemExit("\n".join(problems))
    return {job.label: figures(job) for job in estimator.estimate().jobs}, time.perf_counter() - started


def measured(where: list[str], first: list[str], grid: list[str], sample: int,
             figures: Callable = answer_figures) -> tuple[dict[str, list], dict[str, list]]:
    """`first` run (filling the cache), `grid` estimated as it stands and with `--sample`, then run, the wall times
    printed: each job's `figures` in the two estimates."""
    print(f"{' '.join(first)} run first, to fill the cache: {sweep([*where, *first]) / 60:.1f} min")
    plain, plain_seconds = estimated([*where, *grid], 0, figures)
    sampled, sampled_seconds = estimated([*where, *grid], sample, figures)
    print(f"ragsweep estimate -m ... {' '.join(grid)}: {plain_seconds:.1f} s; with --sample {sample}: "
          f"{sampled_seconds / 60:.1f} min; then the sweep: {sweep([*where, *grid]) / 60:.1f} min\n")
    return plain, sampled


def logged(folder: Path) -> dict[str, list[float]]:
    """Each job run's figures (`FIGURES`), by its name."""
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{folder}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"])
    runs = runs[runs["tags.ragsweep.role"] == "job"]
    names = ("prompt_tokens_mean", "completion_tokens_mean", "query_prompt_tokens_mean",
             "query_completion_tokens_mean")
    return {row["tags.mlflow.runName"]: [*(QUESTIONS * _logged_value(row, name) for name in names),
                                         row["metrics.cost_total"]] for _, row in runs.iterrows()}


def _logged_value(row, name: str) -> float:
    """A metric of the run, 0 where it logged none (a job without a rewriter has no rewrites' tokens)."""
    value = row.get(f"metrics.{name}")
    return 0.0 if value is None or math.isnan(value) else float(value)


def swept(label: str) -> str:
    """The parts of a job's label the grid sets."""
    return ",".join(part for part in label.split(",") if part.startswith(("query=", "k=")))


def ratio(mine: float, theirs: float) -> str:
    """mine / theirs, or - where the run logged none (a stage the job does not have)."""
    return f"{mine / theirs:.3f}" if theirs else "-"


def interval(bounds: tuple[float, float] | None, theirs: float) -> str:
    """The estimate's 95% interval over what was logged (- without one: no call of the job's own scaled it)."""
    return "-" if bounds is None else f"[{bounds[0] / theirs:.3f}, {bounds[1] / theirs:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--sample", type=int, default=16, help="questions asked first per job (default 16)")
    parser.add_argument("--folder", type=Path, help="an empty folder to work in and keep (default: a temporary one)")
    args = parser.parse_args()
    if args.folder is not None and args.folder.exists() and any(args.folder.iterdir()):
        raise SystemExit(f"--folder {args.folder}: give an empty or new folder (its runs would be mixed in)")
    with tempfile.TemporaryDirectory(prefix="ragsweep-estimate-") as scratch:
        folder = (args.folder or Path(scratch)).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        where = [*FIXED, f"paths.root={folder}", f"paths.data={args.data.resolve()}", f"cache.dir={folder / 'cache'}"]
        plain, sampled = measured(where, FIRST, GRID, args.sample)
        runs = logged(folder)
        print(f"| job | estimate | {' | '.join(FIGURES)} | completion tokens' 95% interval | cost_total's 95% "
              f"interval |\n|---|---|{'---:|' * (len(FIGURES) + 2)}")
        totals = {name: [0.0] * len(FIGURES) for name in ("plain", "sampled", "logged")}
        for label, theirs in runs.items():
            for name, values in (("plain", plain[label]), ("sampled", sampled[label]), ("logged", theirs)):
                totals[name] = [a + b for a, b in zip(totals[name], values)]
            print(f"| {swept(label)} | logged | " + " | ".join(f"{value:,.0f}" for value in theirs[:-1]) +
                  f" | {theirs[-1]:.5f} | | |")
            for name, mine in (("as it stands", plain[label]), (f"--sample {args.sample}", sampled[label])):
                print(f"| | {name} / logged | " + " | ".join(map(ratio, mine, theirs)) +
                      f" | {interval(mine[-1].get('completion_tokens'), theirs[1] + theirs[3])} | "
                      f"{interval(mine[-1].get('cost_total'), theirs[-1])} |")
        for name, mine in (("as it stands", totals["plain"]), (f"--sample {args.sample}", totals["sampled"])):
            print(f"| the sweep | {name} / logged | " + " | ".join(map(ratio, mine, totals["logged"])) + " | | |")
        print(sample_sizes(where))
    print(provenance())


def sample_sizes(where: list[str], sizes: tuple[int, ...] = (8, 16, 24, 32), draws: int = 200) -> str:
    """For each job the first run did not hold, and each of its completion tokens and cost_total: over `draws` random
    samples of n questions, the share whose estimate (the sample's calls as they were, the others predicted from the
    first run's calls scaled by the sample's) is within 5% of what its calls took, the middle 90% of estimated /
    actual, and the share whose 95% interval holds the actual figure."""
    from dataclasses import replace
    from itertools import product

    import numpy as np

    from ragsweep.runner.build import build
    from ragsweep.runner.compose import compose_config
    from ragsweep.runner.estimating import SweepEstimator, planned_calls
    from ragsweep.runner.plan import plan_job

    def held(point: list[str]) -> tuple:
        pipeline = build(plan_job(compose_config(ROOT / "conf", [*where, *point])))
        return pipeline, planned_calls(pipeline)

    def estimated(*jobs: tuple) -> list:
        estimator = SweepEstimator()
        for position, (pipeline, calls) in enumerate(jobs):
            estimator.add(str(position), pipeline, calls)
        return estimator.estimate().jobs

    first, rng, names = held(FIRST), np.random.default_rng(0), ("completion_tokens", "cost_total")
    rows = {name: [f"\n{name} of a job estimated from a random sample of n of its {QUESTIONS} questions "
                   f"({draws} samples): share within 5% [5th, 95th percentile of estimated / actual]; share whose 95% "
                   "interval holds the actual", "| job | " + " | ".join(f"n={n}" for n in sizes) + " |",
                   "|---|" + "---|" * len(sizes)] for name in names}
    for query, k in product(*(values.split("=")[1].split(",") for values in GRID)):
        point = [f"query={query}", f"k={k}"]
        if point == FIRST:
            continue
        pipeline, calls = held(point)
        actual = {name: estimated((pipeline, calls))[0].total(name) for name in names}
        cells: dict[str, list[str]] = {name: [] for name in names}
        for n in sizes:
            ratios, covered = {name: [] for name in names}, dict.fromkeys(names, 0)
            for _ in range(draws):
                own = set(rng.choice(QUESTIONS, n, replace=False).tolist())
                sampled = replace(calls, planned=[call if call.question in own else replace(call, held=None)
                                                  for call in calls.planned])
                job = estimated(first, (pipeline, sampled))[1]
                for name in names:
                    ratios[name].append(job.total(name) / actual[name])
                    low, high = job.intervals.get(name, (math.inf, -math.inf))
                    covered[name] += low <= actual[name] <= high
            for name in names:
                low, high = np.percentile(ratios[name], [5, 95])
                cells[name].append(f"{np.mean(np.abs(np.array(ratios[name]) - 1) < 0.05):.2f} [{low:.3f}, "
                                   f"{high:.3f}]; {covered[name] / draws:.2f}")
        for name in names:
            rows[name].append(f"| {','.join(point)} | " + " | ".join(cells[name]) + " |")
    return "\n".join(line for name in names for line in rows[name])


if __name__ == "__main__":
    main()
