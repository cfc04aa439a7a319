"""`ragsweep estimate` against the calls, tokens and cost the same sweep then logs (issue 50: within 5%).

From an empty stage cache and an empty folder (its own MLflow store): SmolLM2 answers sotu_qa (68 questions) in
process (generator=llama_cpp, bm25, no query rewriting) at k=3, so the cache holds that model's answers; then the
grid query=none,multi_query x k=3,5 (the rewriter asks the same model) is estimated: as it stands (one job held,
three predicted, the rewrites from no held call of theirs: a bound), with --sample 16 (each job's calls for 16
questions made first and cached, its other calls scaled by them) and, given --within SHARE, with more questions
asked until the sweep's tokens and cost are known within ±SHARE. Then that grid is run, and each job's and the
sweep's estimated tokens (answers', rewrites') and cost_total (with 95% intervals) are set against what was logged.
Prices: SmolLM2's tokens at an endpoint's rates (input 0.15, output 0.6 per million) and prices.cpu_second=0.0001.
Prints per job and for the sweep each estimate / logged, the wall times, how often a random sample of n questions
(the same of each new job, as --sample asks them) would have brought each new job's and the sweep's completion tokens
and cost_total within 5% and how often their 95% intervals would have held them (200 samples of each size, from the
calls the sweep then holds), and the provenance line.

`--smallest` (what `make test` runs): the same on sotu_qa's first 4 questions (dataset.limit=4), answers of at most
16 tokens, --sample 2, and 5 random samples of 2 questions.

Usage: python benchmarks/estimate.py [--data DIR] [--sample N] [--within SHARE] [--folder DIR] [--smallest]
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from racing import provenance

if TYPE_CHECKING:
    from ragsweep.runner.estimating.estimates import SweepEstimate

ROOT = Path(__file__).resolve().parents[1]
MODEL = "SmolLM2-135M-Instruct.Q4_1"
QUESTIONS = 68
SMALLEST = 4  # --smallest's questions: the first 4 of sotu_qa
FIXED = ["dataset=sotu_qa", "generator=llama_cpp", "retriever=bm25", "prices.cpu_second=0.0001",
         f"prices.models={{{MODEL}:{{input:0.15,output:0.6}}}}", "bootstrap_samples=200"]
FIRST = ["query=none", "k=3"]
GRID = ["query=none,multi_query", "k=3,5"]
# The config the sweeps and estimates read: main() points it at `llama_rewriters`' copy (estimate_judge.py keeps this).
CONF, SWEEP = ROOT / "conf", ROOT / "sweep.py"
FIGURES = ("answers' prompt tokens", "answers' completion tokens", "rewrites' prompt tokens",
           "rewrites' completion tokens", "cost_total")


def llama_rewriters(folder: Path) -> tuple[Path, Path]:
    """A copy of conf/ (and sweep.py beside it) in `folder` whose rewriters' model is llama_cpp, as this benchmark
    measured them before their default became transformers: a grid holding query=none cannot name
    query/generator=llama_cpp on the command line (none has no model, so Hydra refuses the override)."""
    conf = folder / "conf"
    shutil.copytree(ROOT / "conf", conf)
    for option in ("multi_query", "hyde", "decompose"):
        path = conf / "query" / f"{option}.yaml"
        text = path.read_text(encoding="utf-8")
        if "  - generator: transformers\n" not in text:
            raise SystemExit(f"{path}: its default model is no longer transformers; update llama_rewriters")
        path.write_text(text.replace("  - generator: transformers\n", "  - generator: llama_cpp\n"), encoding="utf-8")
    shutil.copy(ROOT / "sweep.py", folder / "sweep.py")
    return conf, folder / "sweep.py"


def sweep(args: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(SWEEP), "-m", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the sweep failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def answer_figures(job) -> list:
    """A job's `FIGURES` and its 95% intervals (by figure: none without a sample), from its `JobEstimate`."""
    from ragsweep.runner.estimating.estimates import StageCount

    answers, rewrites = job.stages["generation"], job.stages.get("query", StageCount())
    return [answers.prompt_tokens, answers.completion_tokens, rewrites.prompt_tokens, rewrites.completion_tokens,
            job.cost_total, job.intervals]


def estimated(args: list[str], sample: int, figures: Callable = answer_figures,
              within: float | None = None) -> tuple[dict[str, list], float, SweepEstimate]:
    """Each job's `figures` as `ragsweep estimate [--sample N] [--within SHARE]` predicts them, its wall time and the
    whole estimate."""
    from ragsweep.runner.estimating.sweep import SweepEstimator
    from ragsweep.runner.preflight import check_command_line

    started = time.perf_counter()
    estimator = SweepEstimator(sample)
    problems = check_command_line(["-m", *args], CONF, visit=estimator.visit)
    if problems:
        raise SystemExit("\n".join(problems))
    made = estimator.narrowed(within) if within is not None else estimator.estimate()
    return {job.label: figures(job) for job in made.jobs}, time.perf_counter() - started, made


def measured(where: list[str], first: list[str], grid: list[str], sample: int, figures: Callable = answer_figures,
             within: float | None = None) -> list[tuple[dict[str, list], SweepEstimate]]:
    """`first` run (filling the cache), `grid` estimated as it stands, with `--sample` and (when given) with
    `--within` from that sample, then run, the wall times printed: each estimate's jobs' `figures`, and the estimate."""
    print(f"{' '.join(first)} run first, to fill the cache: {sweep([*where, *first]) / 60:.1f} min")
    made = []
    for asked, share in ((0, None), (sample, None), *([(sample, within)] if within is not None else [])):
        by_job, seconds, estimate = estimated([*where, *grid], asked, figures, share)
        made.append((by_job, estimate))
        print(f"ragsweep estimate -m ... {' '.join(grid)}" + (f" --sample {asked}" if asked else "") +
              (f" --within {share}: {estimate.sample} questions of each job" if share is not None else "") +
              f": {seconds / 60:.1f} min")
    print(f"then the sweep: {sweep([*where, *grid]) / 60:.1f} min\n")
    return made


def logged(folder: Path, questions: int = QUESTIONS) -> dict[str, list[float]]:
    """Each job run's figures (`FIGURES`), by its name."""
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{folder}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"])
    runs = runs[runs["tags.ragsweep.role"] == "job"]
    names = ("prompt_tokens_mean", "completion_tokens_mean", "query_prompt_tokens_mean",
             "query_completion_tokens_mean")
    return {row["tags.mlflow.runName"]: [*(questions * _logged_value(row, name) for name in names),
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
    global CONF, SWEEP
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--sample", type=int, default=None, help="questions asked first per job (default 16)")
    parser.add_argument("--within", type=float, help="then also estimate with --within SHARE, from that sample")
    parser.add_argument("--folder", type=Path, help="an empty folder to work in and keep (default: a temporary one)")
    parser.add_argument("--smallest", action="store_true", help="4 questions, --sample 2 (make test runs it)")
    args = parser.parse_args()
    questions, limit = ((SMALLEST, [f"dataset.limit={SMALLEST}", "generator.max_tokens=16"]) if args.smallest
                        else (QUESTIONS, []))
    args.sample = args.sample or (2 if args.smallest else 16)
    if args.folder is not None and args.folder.exists() and any(args.folder.iterdir()):
        raise SystemExit(f"--folder {args.folder}: give an empty or new folder (its runs would be mixed in)")
    with tempfile.TemporaryDirectory(prefix="ragsweep-estimate-") as scratch:
        folder = (args.folder or Path(scratch)).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        CONF, SWEEP = llama_rewriters(folder / "llama_rewriters")
        where = [*FIXED, *limit, f"paths.root={folder}", f"paths.data={args.data.resolve()}",
                 f"cache.dir={folder / 'cache'}"]
        made = measured(where, FIRST, GRID, args.sample, within=args.within)
        names = ["as it stands", f"--sample {args.sample}", f"--within {args.within}"][:len(made)]
        runs = logged(folder, questions)
        print(f"| job | estimate | {' | '.join(FIGURES)} | completion tokens' 95% interval | cost_total's 95% "
              f"interval |\n|---|---|{'---:|' * (len(FIGURES) + 2)}")
        logged_total = [sum(values) for values in zip(*runs.values())]
        for label, theirs in runs.items():
            print(f"| {swept(label)} | logged | " + " | ".join(f"{value:,.0f}" for value in theirs[:-1]) +
                  f" | {theirs[-1]:.5f} | | |")
            for name, (by_job, _) in zip(names, made):
                mine = by_job[label]
                print(f"| | {name} / logged | " + " | ".join(map(ratio, mine, theirs)) +
                      f" | {interval(mine[-1].get('completion_tokens'), theirs[1] + theirs[3])} | "
                      f"{interval(mine[-1].get('cost_total'), theirs[-1])} |")
        for name, (by_job, estimate) in zip(names, made):
            mine = [sum(values) for values in zip(*(by_job[label][:-1] for label in runs))]
            print(f"| the sweep | {name} / logged | " + " | ".join(map(ratio, mine, logged_total)) +
                  f" | {interval(estimate.intervals.get('completion_tokens'), logged_total[1] + logged_total[3])} | "
                  f"{interval(estimate.intervals.get('cost_total'), logged_total[-1])} |")
        print(sample_sizes(where, (2,), 5, questions) if args.smallest else sample_sizes(where))
    print(provenance())


def sample_sizes(where: list[str], sizes: tuple[int, ...] = (8, 16, 24, 32), draws: int = 200,
                 questions: int = QUESTIONS) -> str:
    """For each job the first run did not hold and for the sweep, and each of completion tokens and cost_total: over
    `draws` random samples of n questions (the same of each job, as --sample asks them), the share whose estimate
    (the sample's calls as they were, the others predicted from the held calls scaled by the sample's) is within 5%
    of what the calls took, the middle 90% of estimated / actual, and the share whose 95% interval holds it."""
    from dataclasses import replace
    from itertools import product

    import numpy as np

    from ragsweep.runner.build import build
    from ragsweep.runner.compose import compose_config
    from ragsweep.runner.estimating.job_calls import planned_calls
    from ragsweep.runner.estimating.sweep import SweepEstimator
    from ragsweep.runner.plan import plan_job

    def held(point: list[str]) -> tuple:
        pipeline = build(plan_job(compose_config(CONF, [*where, *point])))
        return pipeline, planned_calls(pipeline)

    def estimated(*jobs: tuple) -> SweepEstimate:
        estimator = SweepEstimator()
        for position, (pipeline, calls) in enumerate(jobs):
            estimator.add(str(position), pipeline, calls)
        return estimator.estimate()

    points = [[f"query={query}", f"k={k}"] for query, k in product(*(values.split("=")[1].split(",")
                                                                      for values in GRID))]
    first, rng, names = held(FIRST), np.random.default_rng(0), ("completion_tokens", "cost_total")
    others = [held(point) for point in points if point != FIRST]
    labels = [",".join(point) for point in points if point != FIRST] + ["the sweep"]
    made = estimated(first, *others)
    actual = {name: [job.total(name) for job in made.jobs[1:]] + [made.total(name)] for name in names}
    ratios = {(name, n): [] for name in names for n in sizes}
    covered = {(name, n): np.zeros(len(labels)) for name in names for n in sizes}
    for n in sizes:
        for _ in range(draws):
            own = set(rng.choice(questions, n, replace=False).tolist())
            sampled = estimated(first, *((pipeline, replace(calls, planned=[
                call if call.question in own else replace(call, held=None) for call in calls.planned]))
                for pipeline, calls in others))
            for name in names:
                figures = [job.total(name) for job in sampled.jobs[1:]] + [sampled.total(name)]
                bounds = [job.intervals.get(name) for job in sampled.jobs[1:]] + [sampled.intervals.get(name)]
                ratios[name, n].append(np.array(figures) / actual[name])
                covered[name, n] += [bool(b) and b[0] <= a <= b[1] for a, b in zip(actual[name], bounds)]
    lines = []
    for name in names:
        lines += [f"\n{name} estimated from a random sample of n of the {questions} questions, the same of each job "
                  f"({draws} samples): share within 5% [5th, 95th percentile of estimated / actual]; share whose 95% "
                  "interval holds the actual", "| job | " + " | ".join(f"n={n}" for n in sizes) + " |",
                  "|---|" + "---|" * len(sizes)]
        for row, label in enumerate(labels):
            cells = []
            for n in sizes:
                values = np.array(ratios[name, n])[:, row]
                low, high = np.percentile(values, [5, 95])
                cells.append(f"{np.mean(np.abs(values - 1) < 0.05):.2f} [{low:.3f}, {high:.3f}]; "
                             f"{covered[name, n][row] / draws:.2f}")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
