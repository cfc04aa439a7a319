"""`ragsweep estimate` with an LLM judge, against the judge's calls and tokens and the cost the same sweep then makes.

From an empty stage cache and an empty folder (its own MLflow store): SmolLM2 answers the first 24 questions of
sotu_qa (generator=llama_cpp, bm25) and judges the answers with itself (judge=llm judge/generator=llama_cpp, each
answer's claims decomposed by the model, each claim checked against each passage), at k=3, so the cache holds that
model's answers, claim lists and verdicts. Then k=3,5 is estimated as it stands (the k=5 job predicted from the k=3
job's calls) and with --sample 8 (the k=5 job's calls for 8 questions made first and cached, its others scaled by
them), and run. Each
job's judge calls, their prompt and completion tokens, and cost_total (with its 95% interval) are set against what
the sweep made: the judge's figures counted from the stage cache after the sweep (which then holds every call the
runs made), cost_total as logged. Prices as in benchmarks/estimate.py.

`--smallest` (what `make test` runs): the first 2 questions (dataset.limit=2), answers of at most 16 tokens,
--sample 1.

Usage: python benchmarks/estimate_judge.py [--data DIR] [--sample N] [--smallest]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from estimate import FIXED, estimated, interval, logged, measured, ratio, swept
from racing import provenance

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = 24
SMALLEST = 2  # --smallest's questions
JUDGED = [*FIXED, "judge=llm", "judge/generator=llama_cpp", "judge.decompose=true", "query=none"]  # as measured
FIRST = ["k=3"]
GRID = ["k=3,5"]
FIGURES = ("judge calls", "judge's prompt tokens", "judge's completion tokens", "cost_total")


def judge_figures(job) -> list:
    """A job's judge calls and tokens, its cost_total and its interval, from its `JobEstimate`."""
    judge = job.stages["judge"]
    return [judge.calls, judge.prompt_tokens, judge.completion_tokens, job.cost_total, job.intervals]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--sample", type=int, default=None, help="questions asked first per job (default 8)")
    parser.add_argument("--smallest", action="store_true", help="2 questions, --sample 1 (make test runs it)")
    args = parser.parse_args()
    questions = SMALLEST if args.smallest else QUESTIONS
    args.sample = args.sample or (1 if args.smallest else 8)
    with tempfile.TemporaryDirectory(prefix="ragsweep-estimate-judge-") as scratch:
        folder = Path(scratch)
        where = [*JUDGED, f"dataset.limit={questions}", *(["generator.max_tokens=16"] if args.smallest else []),
                 f"paths.root={folder}", f"paths.data={args.data.resolve()}", f"cache.dir={folder / 'cache'}"]
        (plain, _), (sampled, _) = measured(where, FIRST, GRID, args.sample, judge_figures)
        made, *_ = estimated([*where, *GRID], 0, judge_figures)  # every call held now: what the runs made
        costs = {label: figures[-1] for label, figures in logged(folder).items()}
        print(f"| job | estimate | {' | '.join(FIGURES)} | cost_total's 95% interval |\n|---|---|"
              f"{'---:|' * (len(FIGURES) + 1)}")
        for label, cost in costs.items():
            theirs = [*made[label][:3], cost]
            print(f"| {swept(label)} | made | " + " | ".join(f"{value:,.0f}" for value in theirs[:-1]) +
                  f" | {cost:.5f} | |")
            for name, mine in (("as it stands", plain[label]), (f"--sample {args.sample}", sampled[label])):
                print(f"| | {name} / made | " + " | ".join(map(ratio, mine, theirs)) +
                      f" | {interval(mine[-1].get('cost_total'), cost)} |")
    print(provenance())


if __name__ == "__main__":
    main()
