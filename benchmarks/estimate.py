"""`ragsweep estimate` against the calls, tokens and cost the same sweep then logs (issue 50: within 5%).

From an empty stage cache and an empty folder (its own MLflow store): SmolLM2 answers sotu_qa (68 questions) in
process (generator=llama_cpp, bm25) at k=3, so the cache holds that model's calls; then the estimate of the grid
k=3,4,5 (one job held, two predicted from the held calls), then that grid is run and each job's estimated prompt
and completion tokens and cost_total are set against what its run logged. Prices: SmolLM2's tokens at an
endpoint's rates (input 0.15, output 0.6 per million) and prices.cpu_second=0.0001.
Prints each job's estimate, its logged values and their ratio, the sweep's, the wall times, how well other
predictors of the completion tokens than the held calls' mean would have done (a line and a power law fitted on
the k=3 calls' prompt tokens), and the provenance line (machine, date, commit).

Usage: python benchmarks/estimate.py [--data DIR]
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
MODEL = "SmolLM2-135M-Instruct.Q4_1"
FIXED = ["dataset=sotu_qa", "generator=llama_cpp", "retriever=bm25", "prices.cpu_second=0.0001",
         f"prices.models={{{MODEL}:{{input:0.15,output:0.6}}}}", "bootstrap_samples=200"]
GRID = "k=3,4,5"


def sweep(args: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "sweep.py"), "-m", *args], cwd=ROOT, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise SystemExit(f"the sweep failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def logged(folder: Path) -> dict[str, dict[str, float]]:
    """Each job run's prompt and completion tokens and cost_total, by its name."""
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{folder}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"])
    runs = runs[runs["tags.ragsweep.role"] == "job"]
    return {row["tags.mlflow.runName"]: {"prompt_tokens": row["metrics.prompt_tokens_mean"] * 68,
                                         "completion_tokens": row["metrics.completion_tokens_mean"] * 68,
                                         "cost_total": row["metrics.cost_total"]} for _, row in runs.iterrows()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    from ragsweep.runner.entry import conf_dir
    from ragsweep.runner.estimating import SweepEstimator
    from ragsweep.runner.preflight import check_command_line

    with tempfile.TemporaryDirectory(prefix="ragsweep-estimate-") as scratch:
        folder = Path(scratch)
        where = [f"paths.root={folder}", f"paths.data={args.data.resolve()}", f"cache.dir={folder / 'cache'}"]
        first = sweep([*FIXED, *where, "k=3"])
        print(f"k=3 run first, to fill the cache: {first / 60:.1f} min")
        estimator = SweepEstimator()
        started = time.perf_counter()
        problems = check_command_line(["-m", *FIXED, *where, GRID], conf_dir(ROOT), visit=estimator.visit)
        if problems:
            raise SystemExit("\n".join(problems))
        estimate = estimator.estimate()
        print(f"ragsweep estimate -m ... {GRID}: {time.perf_counter() - started:.1f} s; then the sweep: "
              f"{sweep([*FIXED, *where, GRID]) / 60:.1f} min\n")
        runs = logged(folder)
        print("| job | answers cached | | prompt tokens | completion tokens | cost_total |")
        print("|---|---|---|---:|---:|---:|")
        totals = {"estimated": [0.0, 0.0, 0.0], "logged": [0.0, 0.0, 0.0]}
        for job in estimate.jobs:
            answers = job.stages["generation"]
            mine = [answers.prompt_tokens, answers.completion_tokens, job.cost_total]
            theirs = [runs[job.label][name] for name in ("prompt_tokens", "completion_tokens", "cost_total")]
            for side, values in (("estimated", mine), ("logged", theirs)):
                totals[side] = [a + b for a, b in zip(totals[side], values)]
            key = next((part for part in job.label.split(",") if part.startswith("k=")), job.label)
            print(f"| {key} | {answers.cached} of {answers.calls} | estimated | {mine[0]:,} | {mine[1]:,} | "
                  f"{mine[2]:.5f} |")
            print(f"| | | logged | {theirs[0]:,.0f} | {theirs[1]:,.0f} | {theirs[2]:.5f} |")
            print(f"| | | ratio | {mine[0] / theirs[0]:.3f} | {mine[1] / theirs[1]:.3f} | {mine[2] / theirs[2]:.3f} |")
        mine, theirs = totals["estimated"], totals["logged"]
        ratios = " | ".join(f"{a / b:.3f}" for a, b in zip(mine, theirs))
        print(f"| sweep | | ratio | {ratios} |")
        print(f"\nnew calls estimated: {estimate.new_calls}, costing {estimate.new_cost:.5f}")
        print(completion_predictors([*FIXED, *where]))
    print(provenance())


def completion_predictors(overrides: list[str]) -> str:
    """Completion tokens of the k=4 and k=5 answers (all cached once the grid ran) predicted from the k=3 ones in
    three ways, each as predicted / actual: their mean (what the estimate takes), a line fitted on their prompt
    tokens, and a power law fitted on them (log-log); with the correlation of prompt and completion tokens."""
    import numpy as np

    from ragsweep.runner.build import build
    from ragsweep.runner.compose import compose_config
    from ragsweep.runner.estimating import planned_calls
    from ragsweep.runner.plan import plan_job

    def held(k: int) -> np.ndarray:
        calls = planned_calls(build(plan_job(compose_config(ROOT / "conf", [*overrides, f"k={k}"])))).planned
        return np.array([(c.held.prompt_tokens, c.held.completion_tokens) for c in calls
                         if c.stage == "generation" and c.held is not None], dtype=float)

    base = held(3)
    slope, intercept = np.polyfit(base[:, 0], base[:, 1], 1)
    power, scale = np.polyfit(np.log(base[:, 0]), np.log(base[:, 1] + 1), 1)
    rows = ["\ncompletion tokens of a job's answers predicted from k=3's, / actual: "
            f"(k=3: correlation of prompt and completion tokens {np.corrcoef(base.T)[0, 1]:.2f})",
            "| job | mean | line on prompt tokens | power law |", "|---|---:|---:|---:|"]
    for k in (4, 5):
        calls = held(k)
        actual = calls[:, 1].sum()
        predictions = (base[:, 1].mean() * len(calls), (intercept + slope * calls[:, 0]).sum(),
                       (np.exp(scale + power * np.log(calls[:, 0])) - 1).sum())
        rows.append(f"| k={k} | " + " | ".join(f"{value / actual:.3f}" for value in predictions) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
