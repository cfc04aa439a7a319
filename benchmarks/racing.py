"""Does a race find the grid's winner for a third of the grid's evaluations? 100 races replayed on one grid's scores.

1. Scores: the 36-configuration chroma_general grid of benchmarks/grid.py (minilm; chunkers recursive 200/0,
   fixed 800/400, fixed 250/125 x stores numpy, chroma, qdrant x k 1, 3, 5, 10) run through the real runner on
   the given stage cache, into a throwaway MLflow store; each job's per-question token_iou, ndcg and recall read
   from its per_query.jsonl and kept in --scores, so the replay reruns without the grid while that file exists.
2. Replay: for each of --orders seeded question orders (numpy.random.default_rng(seed).permutation(N), seeds
   0, 1, ...), `runner.racing.schedule.Race` with the racing sweeper's settings (schedule 10/25/50/100%,
   min_questions 10,
   delta 0.05, the metric's registered bounds) is fed each round's survivors' values as `runner.racing.sweep.run_race`
   feeds it: a configuration stopped after a round ran that round's questions, one that survives (or is left
   alone, and goes straight to the last round) ran all N. Per order it records the race's winner (the leader
   after the last round); whether that is the grid's winner (the best mean over all N, first of equals) or tied
   with it, tied meaning that a paired 95% t-interval of the N per-question differences between the two contains
   0 (identical values give a zero-width interval at 0: tied); and the share of (configuration, question)
   evaluations run, the questions each configuration ran summed over configurations / (K x N).
Prints, per metric, the winner-or-tied count, the mean share of evaluations and the configurations stopped after
each round on average, with the race's betting sequence (method="betting": one-sided, metrics.confidence_sequence.
betting_excludes) and the empirical-Bernstein one (method="empirical_bernstein"), on the default schedule and on
finer ones (a check every 10%, every 5% from 10%); then, for token_iou, the sequences' half-widths at each round
for the pairs nearest the grid's winner, the questions any sequence that bets needs for each (`needed`), the
share that would give (`floor_share`), and last `token_iou_winner_or_tied=A/100 token_iou_share=B` for the
race's sequence at the defaults.

3. Real (--real, instead of 1 and 2): `python sweep.py -m +sweep=generation` (9 configurations, SmolLM2 through
   llama.cpp, ranked on answer_f1) and the same grid raced (`hydra/sweeper=racing`, the defaults), one after the
   other in this process's run, each from its own empty folder (paths.root: a cold cache and MLflow store),
   both with judge=embedding so that judge calls are counted. Per run: wall time; answers generated and judge
   calls, summed over the child runs' logged `cache_misses_answers` and `cache_misses_verdicts` (every round of a
   race), and recounted as the answer and verdict entries in its cache; (configuration, question) evaluations
   from the full grid's per_query.jsonl files and the race's parent run; the winner. Prints the table and, last, `real_wall_ratio=A
   real_answers_ratio=B real_judge_calls_ratio=C` (race / full).

`--smallest` (what `make test` runs): 1 and 2 on benchmarks/grid.py's smallest grid (6 configurations) over
benchmarks/smallest.py's short addresses, 3 orders, in a temporary folder (cache and scores); with --real, the
generation grid cut to bm25 x k 1, 3 on 4 questions (answers of at most 16 tokens), raced from a first round of
2 questions.

Usage: python benchmarks/racing.py [--data ../shared/data/chroma_general] [--cache .cache/ragsweep]
                                   [--scores /tmp/ragsweep-racing-scores.json] [--orders 100] [--smallest]
       python benchmarks/racing.py --real [--shared ../shared/data] [--smallest]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from grid import CHUNKERS, KS, SMALLEST, STORES

ROOT = Path(__file__).resolve().parents[1]
METRICS = ("token_iou", "ndcg", "recall")
SCHEDULE = (0.1, 0.25, 0.5, 1.0)  # the first schedule tried
GROWN = ()  # the sweeper's default: rounds grown from the question set (`RacingSettings.sizes`)
MIN_QUESTIONS = 10
DELTA = 0.05

Table = Mapping[str, np.ndarray]  # configuration -> its per-question values, in the dataset's order


def configurations(smallest: bool = False) -> dict[str, list[str]]:
    """The grid's configurations (its smallest's, with `smallest`), named as benchmarks/grid.py names their output
    folders, in its order."""
    names, stores, ks = ((SMALLEST["chunkers"], SMALLEST["stores"], SMALLEST["ks"]) if smallest
                         else (list(CHUNKERS), STORES, KS))
    return {f"{name.replace(' ', '_').replace('/', '-')}_{store}_k{k}": [*CHUNKERS[name], f"store={store}", f"k={k}"]
            for name in names for store in stores for k in ks}


def collect(data: Path, cache: Path, workdir: Path, smallest: bool = False) -> dict:
    """Run the grid through the runner (one Hydra loader, as a multirun's jobs are) and read every job's
    per-question values: {"ids": [...], "metrics": {metric: {configuration: [value or None, ...]}}}."""
    import ragsweep  # noqa: F401  (offline defaults)
    from hydra import compose, initialize_config_dir

    from ragsweep.runner.plan import plan_job
    from ragsweep.runner.run import RunContext, run

    table: dict = {"ids": None, "metrics": {metric: {} for metric in METRICS}}
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        for label, overrides in configurations(smallest).items():
            cfg = compose("config", overrides=[*overrides, "dataset=chroma_general", f"dataset.path={data}",
                                               f"paths.root={workdir}", f"paths.cache={cache}",
                                               "embedder.progress=false", "experiment=racing-replay"])
            run(plan_job(cfg), RunContext(workdir / "outputs" / label))
            records = [json.loads(line) for line in (workdir / "outputs" / label / "per_query.jsonl").open()]
            ids = [record["id"] for record in records]
            if table["ids"] is None:
                table["ids"] = ids
            elif ids != table["ids"]:
                raise RuntimeError(f"{label}'s per_query.jsonl lists other questions than the first job's")
            for metric in METRICS:
                table["metrics"][metric][label] = [record["metrics"].get(metric) for record in records]
    return table


@dataclass(frozen=True, slots=True)
class Outcome:
    """One replayed race: its winner, the questions each configuration ran, how many stopped after each round."""

    winner: str
    questions: dict[str, int]
    stopped: tuple[int, ...]  # per round but the last (stopping there saves nothing); 0 for a round skipped
    launches: int  # jobs launched: the survivors of every round, each paying a round's fixed cost


def replay_race(table: Table, order: np.ndarray, bounds: tuple[float, float], maximize: bool = True,
                schedule: Sequence[float] = SCHEDULE, method: str = "betting") -> Outcome:
    """One race over `table` in the question order `order`, run as `runner.racing.sweep.run_race` runs its rounds."""
    from ragsweep.runner.racing.sweep import RacingSettings
    from ragsweep.runner.racing.schedule import Race

    total = order.size
    sizes = RacingSettings("token_iou", DELTA, MIN_QUESTIONS, tuple(schedule)).sizes(total, len(table))
    race = Race(list(table), total, bounds, DELTA, maximize, method)
    questions: dict[str, int] = {}
    stopped = [0] * (len(sizes) - 1)
    round_index = launches = 0
    while True:
        n = sizes[round_index]
        questions.update(dict.fromkeys(race.survivors, n))
        launches += len(race.survivors)
        stops = race.update(round_index, {config: table[config][order[:n]] for config in race.survivors})
        if n == total:
            return Outcome(race.leader, questions, tuple(stopped), launches)
        stopped[round_index] = len(stops)
        round_index = len(sizes) - 1 if len(race.survivors) == 1 else round_index + 1


def tied(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> bool:
    """Whether the paired t-interval at `level` for the mean of a - b contains 0 (identical values: tied)."""
    differences = a - b
    if not differences.any():
        return True
    half = stats.t.ppf((1 + level) / 2, differences.size - 1) * differences.std(ddof=1) / np.sqrt(differences.size)
    return bool(abs(differences.mean()) <= half)


def grid_winner(table: Table, maximize: bool = True) -> str:
    """The configuration with the best mean over every question, the first of equals."""
    sign = 1.0 if maximize else -1.0
    return max(table, key=lambda config: sign * float(table[config].mean()))


def orders(total: int, count: int) -> list[np.ndarray]:
    """The question orders of seeds 0..count-1, as a race with that seed draws them."""
    return [np.random.default_rng(seed).permutation(total) for seed in range(count)]


@dataclass(frozen=True, slots=True)
class Summary:
    """A metric's replayed races, against the full grid."""

    winner_or_tied: int
    races: int
    share: float            # mean over races of the evaluations run / (K x N)
    stopped: tuple[float, ...]  # mean configurations stopped after each round but the last
    winners: dict[str, int]
    launches: float  # mean jobs launched per race


def replay(table: Table, count: int, bounds: tuple[float, float], maximize: bool = True,
           schedule: Sequence[float] = SCHEDULE, method: str = "betting") -> Summary:
    """`count` races over `table`, one per seeded order, each checked against the full grid's winner."""
    best = grid_winner(table, maximize)
    good = {config for config in table if tied(table[config], table[best])}
    total = next(iter(table.values())).size
    outcomes = [replay_race(table, order, bounds, maximize, schedule, method) for order in orders(total, count)]
    winners: dict[str, int] = {}
    for outcome in outcomes:
        winners[outcome.winner] = winners.get(outcome.winner, 0) + 1
    shares = [sum(outcome.questions.values()) / (len(table) * total) for outcome in outcomes]
    return Summary(sum(outcome.winner in good for outcome in outcomes), count, float(np.mean(shares)),
                   tuple(np.mean([outcome.stopped for outcome in outcomes], axis=0)), winners,
                   float(np.mean([outcome.launches for outcome in outcomes])))


def widths(table: Table, count: int, bounds: tuple[float, float], nearest: int = 5) -> list[dict]:
    """For the `nearest` distinct configurations behind the grid's winner (copies with the same values counted
    with the first): the gap c - winner over all N, its sd, the mean half-widths over the orders at each round
    but the last of the empirical-Bernstein and the two-sided betting sequences, the one-sided betting upper
    bound's distance above the running mean (what a race compares with 0), and `needed`."""
    from ragsweep.metrics.confidence_sequence import betting_bound, confidence_sequence
    from ragsweep.runner.racing.schedule import round_sizes

    best = grid_winner(table)
    total = table[best].size
    sizes = round_sizes(SCHEDULE, total, MIN_QUESTIONS)[:-1]
    alpha, spread = DELTA / (len(table) - 1), bounds[1] - bounds[0]
    distinct: dict[str, list[str]] = {}
    for config in table:
        same = next((seen for seen in distinct if np.array_equal(table[seen], table[config])), config)
        distinct.setdefault(same, []).append(config)
    rows = []
    for config in sorted((c for c in distinct if c != best), key=lambda c: -float(table[c].mean()))[:nearest]:
        gap = table[config] - table[best]
        shuffled = np.stack([gap[order] for order in orders(total, count)])
        low, high = confidence_sequence(shuffled, alpha, (-spread, spread), total)
        betting, upper = [], []
        for n in sizes:
            down, up = betting_bound(shuffled[:, :n], alpha, (-spread, spread), total)
            betting.append(float((up - down).mean() / 2))
            _, one_sided = betting_bound(shuffled[:, :n], alpha, (-spread, spread), total, side="upper")
            upper.append(float((one_sided - shuffled[:, :n].mean(axis=1)).mean()))
        rows.append({"config": config, "copies": len(distinct[config]), "gap": float(gap.mean()),
                     "sd": float(gap.std()), "sizes": sizes,
                     "eb": [float((high - low)[:, n - 1].mean() / 2) for n in sizes], "betting": betting,
                     "upper": upper, "needs": needed(float(gap.mean()), alpha, spread)})
    return rows


def needed(gap: float, alpha: float, spread: float) -> float:
    """Questions a sequence that bets needs, in expectation, to show a configuration `gap` behind:
    log(1/alpha) / (|gap| / spread). Any test of "mean difference >= 0" for differences in [-spread, spread]
    multiplies its capital by at most 1 - l x / spread (0 <= l <= 1) per difference x, whose log grows by at most
    |gap| / spread in expectation (Jensen); a race stops c only once that log reaches log(1/alpha). Draws
    without replacement shift the later draws' mean a little, which this leaves out."""
    return float(np.log(1 / alpha) / (abs(gap) / spread)) if gap else math.inf


def floor_share(table: Table, schedule: Sequence[float], bounds: tuple[float, float]) -> float:
    """The share of evaluations if every configuration stopped after the first round with at least the
    questions it needs (`needed`, from its gap to the grid's winner over all N): roughly the least a race with
    any sequence that bets can expect on this grid."""
    from ragsweep.runner.racing.schedule import round_sizes

    best = table[grid_winner(table)]
    total, alpha = best.size, DELTA / (len(table) - 1)
    sizes = round_sizes(schedule, total, MIN_QUESTIONS)
    ran = [next((n for n in sizes if n >= needed(float((values - best).mean()), alpha, bounds[1] - bounds[0])),
                total) for values in table.values()]
    return sum(ran) / (len(table) * total)


def eb_floor(population: int, sizes: Sequence[int], alpha: float, spread: float) -> list[float]:
    """The project's sequence's smallest possible half-width (module `confidence_sequence`, bets capped at
    TRUNCATION, no penalty), on the scale of a difference spanning 2 x spread: where its width stops shrinking
    with a smaller variance."""
    from ragsweep.metrics.confidence_sequence import TRUNCATION

    t = np.arange(1, population + 1, dtype=np.float64)
    weights = np.cumsum(TRUNCATION * (1 + (t - 1) / (population - t + 1)))
    return [float(2 * spread * np.log(2 / alpha) / weights[n - 1]) for n in sizes]


def provenance() -> str:
    """The machine, the date and the commit the figures come from."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    memory = int(Path("/proc/meminfo").read_text().split()[1]) / 1024**2
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return (f"machine: {cpu}, {os.cpu_count()} cores, {memory:.1f} GB RAM, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}; date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; "
            f"commit: {commit}{' with uncommitted changes' if dirty else ''}")


def load_scores(args: argparse.Namespace) -> tuple[dict, float | None]:
    """The per-question values, from --scores, or from the grid (then written to --scores), and the grid's
    seconds (None when read from the file)."""
    if args.scores.exists() and not args.regrid:
        scores = json.loads(args.scores.read_text())
        if sorted(scores["metrics"]["token_iou"]) != sorted(configurations(args.smallest)):
            raise SystemExit(f"{args.scores} holds other configurations than the grid's: rerun with --regrid")
        return scores, None
    logging.getLogger().setLevel(logging.WARNING)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ragsweep-racing-") as scratch:
        scores = collect(args.data.resolve(), args.cache.resolve(), Path(scratch), args.smallest)
    seconds = time.perf_counter() - started
    args.scores.write_text(json.dumps({**scores, "data": str(args.data.resolve()), "cache": str(args.cache.resolve())}))
    return scores, seconds


REAL_RUNS = {"full": ["+sweep=generation"], "race": ["hydra/sweeper=racing", "+sweep=generation"]}


@dataclass(frozen=True, slots=True)
class RealRun:
    """One sweep of the generation grid from an empty folder."""

    seconds: float
    answers: int          # generator calls: the child runs' cache_misses_answers, every round
    judge_calls: int      # judge calls: the child runs' cache_misses_verdicts, every round
    answer_entries: int   # answers on disk after the sweep (an independent count of the same)
    verdict_entries: int
    evaluations: int      # (configuration, question) pairs in the jobs' per_query.jsonl files
    winner: str


@dataclass(frozen=True)
class SweptRuns:
    """A finished sweep's MLflow runs in its folder (paths.root), for counting what it did."""

    client: Any
    folder: Path
    runs: list

    @classmethod
    def read(cls, folder: Path, experiment: str) -> SweptRuns:
        import mlflow

        client = mlflow.MlflowClient(f"sqlite:///{folder}/mlruns/mlflow.db")
        return cls(client, folder, client.search_runs([client.get_experiment_by_name(experiment).experiment_id]))

    @property
    def children(self) -> list:
        return [run for run in self.runs if "mlflow.parentRunId" in run.data.tags]

    def summed(self, key: str) -> int:
        """A metric summed over the child runs and every step each logged (a race's every round)."""
        return int(sum(point.value for run in self.children
                       for point in self.client.get_metric_history(run.info.run_id, key)))

    def winner(self, raced: bool, metric: str) -> Any:
        """The race's winner, or the child run best on `metric`."""
        if raced:
            return next(run for run in self.children if run.data.tags.get("ragsweep.race.winner") == "true")
        return max(self.children, key=lambda run: run.data.metrics.get(metric, -1.0))

    def evaluations(self, raced: bool) -> int:
        """(configuration, question) pairs run: the race's parent run's count, or the grid's per_query.jsonl lines."""
        if raced:
            parent = next(run for run in self.runs if "ragsweep.race.evaluations" in run.data.tags)
            return int(parent.data.tags["ragsweep.race.evaluations"])
        return sum(1 for path in (self.folder / "outputs").rglob("per_query.jsonl") for _ in path.open())


SMALLEST_REAL = {"full": ["dataset.limit=4", "generator.max_tokens=16", "retriever=bm25", "k=1,3"],
                 "race": ["dataset.limit=4", "generator.max_tokens=16", "retriever=bm25", "k=1,3",
                          "hydra.sweeper.racing.min_questions=2"]}


def sweep_from_empty(name: str, shared: Path, folder: Path, smallest: bool = False) -> RealRun:
    """`python sweep.py -m ...` for one of REAL_RUNS (cut to SMALLEST_REAL's size with `smallest`) with
    paths.root=folder, then its counts."""
    overrides = [*REAL_RUNS[name], *(SMALLEST_REAL[name] if smallest else []), "judge=embedding",
                 f"paths.root={folder}", f"paths.data={shared}", f"experiment=racing-real-{name}"]
    started = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "sweep.py"), "-m", *overrides], cwd=ROOT,
                   check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    swept = SweptRuns.read(folder, f"racing-real-{name}")
    calls = {key: swept.summed(key) for key in ("cache_misses_answers", "cache_misses_verdicts")}
    best, evaluations = swept.winner(name == "race", "answer_f1"), swept.evaluations(name == "race")
    entries = {stage: sum(1 for _ in (folder / ".cache" / "ragsweep" / stage).rglob("*.npz"))
               for stage in ("answers", "verdicts")}
    return RealRun(seconds, calls["cache_misses_answers"], calls["cache_misses_verdicts"], entries["answers"],
                   entries["verdicts"], evaluations,
                   f"{best.data.params.get('retriever', '?')} k={best.data.params.get('k', '?')} "
                   f"(answer_f1 {best.data.metrics.get('answer_f1', float('nan')):.3f})")


def real(shared: Path, smallest: bool = False) -> None:
    """The generation grid in full and raced, each from a cold cache, in this one run; ratios race / full."""
    print(provenance())
    results = {}
    for name in REAL_RUNS:
        with tempfile.TemporaryDirectory(prefix=f"ragsweep-racing-{name}-") as scratch:
            results[name] = sweep_from_empty(name, shared.resolve(), Path(scratch), smallest)
        print(f"{name}: {results[name]}", flush=True)
    full, race = results["full"], results["race"]
    print("| sweep | wall time | answers generated (on disk) | judge calls (on disk) | evaluations | winner |")
    print("|---|---:|---:|---:|---:|---|")
    for name, result in results.items():
        print(f"| {' '.join(REAL_RUNS[name])} | {result.seconds / 60:.1f} min | {result.answers} "
              f"({result.answer_entries}) | {result.judge_calls} ({result.verdict_entries}) | {result.evaluations} "
              f"| {result.winner} |")
    print(f"real_wall_ratio={race.seconds / full.seconds:.3f} real_answers_ratio={race.answers / full.answers:.3f} "
          f"real_judge_calls_ratio={race.judge_calls / max(full.judge_calls, 1):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="default ../shared/data/chroma_general")
    parser.add_argument("--cache", type=Path, default=None, help="the stage cache to run on (default .cache/ragsweep)")
    parser.add_argument("--scores", type=Path, default=None,
                        help="per-question values: read when it exists, else written from the grid "
                             "(default /tmp/ragsweep-racing-scores.json)")
    parser.add_argument("--regrid", action="store_true", help="run the grid even if --scores exists")
    parser.add_argument("--orders", type=int, default=None, help="seeded question orders, one race each (default 100)")
    parser.add_argument("--real", action="store_true", help="time the generation grid in full and raced instead")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data", help="paths.data for --real")
    parser.add_argument("--smallest", action="store_true", help="the smallest grid and races (make test runs it)")
    args = parser.parse_args()
    if args.real:
        real(args.shared, args.smallest)
        return
    with tempfile.TemporaryDirectory(prefix="ragsweep-racing-smallest-") as scratch:
        if args.smallest:  # nothing of a real run's read or written: tiny data, cache and scores of its own
            from smallest import chroma_general

            args.data = args.data or chroma_general(Path(scratch)) / "chroma_general"
            args.cache = args.cache or Path(scratch) / "cache"
            args.scores = args.scores or Path(scratch) / "scores.json"
            args.orders = args.orders or 3
        args.data = args.data or ROOT.parent / "shared" / "data" / "chroma_general"
        args.cache = args.cache or ROOT / ".cache" / "ragsweep"
        args.scores = args.scores or Path(tempfile.gettempdir()) / "ragsweep-racing-scores.json"
        args.orders = args.orders or 100
        replayed(args)


def replayed(args: argparse.Namespace) -> None:
    """Steps 1 and 2: the grid's scores (run or read), the races replayed on them, the tables."""
    from ragsweep.metrics.registry import metric as declared

    scores, grid_seconds = load_scores(args)
    print(provenance())
    print(f"grid: {'ran in %.0f s' % grid_seconds if grid_seconds is not None else 'read from ' + str(args.scores)}; "
          f"{len(configurations(args.smallest))} configurations x {len(scores['ids'])} questions")
    fine = tuple(round(0.05 * step, 2) for step in range(2, 21))
    tenths = tuple(round(0.1 * step, 1) for step in range(1, 11))
    labels = {SCHEDULE: "10/25/50/100%", tenths: "every 10%", fine: "every 5% from 10%",
              GROWN: "a tenth, then x1.5 (default)"}
    names = {"betting": "betting, one-sided", "empirical_bernstein": "empirical Bernstein"}
    runs = [(metric, method, schedule) for schedule in (SCHEDULE, tenths, fine, GROWN)
            for metric in METRICS for method in ("empirical_bernstein", "betting")
            if schedule == SCHEDULE or method == "betting" or (metric == "token_iou" and schedule != GROWN)]
    results = {}
    print(f"\n{args.orders} races per row, delta {DELTA}, min_questions {MIN_QUESTIONS}; winner or tied: the race's "
          "winner is the grid's or within its paired 95% t-interval; share: evaluations run / (K x N)")
    print("| metric | confidence sequence | schedule | winner or tied | share of evaluations | jobs launched "
          "| stopped after round 1, 2, 3 (mean) | replay s |")
    print("|---|---|---|---:|---:|---:|---|---:|")
    for metric, method, schedule in runs:
        table = {config: np.array(values, dtype=np.float64) for config, values in scores["metrics"][metric].items()}
        raced = declared(metric)
        started = time.perf_counter()
        summary = replay(table, args.orders, raced.bounds, raced.direction != "minimize", schedule, method)
        results[metric, method, schedule] = summary
        stops = ", ".join(f"{stop:.1f}" for stop in summary.stopped) if schedule == SCHEDULE else "-"
        print(f"| {metric} | {names[method]} | {labels[schedule]} | {summary.winner_or_tied}/{summary.races} "
              f"| {summary.share:.3f} | {summary.launches:.0f} | {stops} | {time.perf_counter() - started:.1f} |",
              flush=True)
    print("targets: winner or tied >= 95/100, share <= 0.35 (token_iou, the metric the grid ranks by)")

    table = {config: np.array(values, dtype=np.float64) for config, values in scores["metrics"]["token_iou"].items()}
    rows = widths(table, args.orders, declared("token_iou").bounds)
    sizes = rows[0]["sizes"]
    alpha = DELTA / (len(table) - 1)
    print(f"\ntoken_iou: half-widths for (c - the grid's winner {grid_winner(table)}), mean over the orders, "
          f"after {', '.join(map(str, sizes))} questions")
    print("| configuration (copies) | gap | sd | empirical Bernstein | betting, two-sided "
          "| betting upper bound - mean, one-sided | questions a bet needs |")
    print("|---|---:|---:|---|---|---|---:|")
    for row in rows:
        print(f"| {row['config']} ({row['copies']}) | {row['gap']:+.3f} | {row['sd']:.3f} "
              f"| {' '.join(f'{w:.3f}' for w in row['eb'])} | {' '.join(f'{w:.3f}' for w in row['betting'])} "
              f"| {' '.join(f'{w:.3f}' for w in row['upper'])} "
              f"| {row['needs']:.0f} |")
    floor = " ".join(f"{w:.3f}" for w in eb_floor(table[grid_winner(table)].size, sizes, alpha, 1.0))
    print(f"empirical Bernstein with every bet at its cap (its narrowest, whatever the variance): {floor}")
    bounds = declared("token_iou").bounds
    print(f"share of evaluations if each configuration stopped in the first round with the questions it needs: "
          f"{floor_share(table, SCHEDULE, bounds):.3f} (10/25/50/100%), {floor_share(table, fine, bounds):.3f} "
          "(every 5%)")
    default = results["token_iou", "betting", GROWN]
    print(f"token_iou_winner_or_tied={default.winner_or_tied}/{default.races} token_iou_share={default.share:.3f}")


if __name__ == "__main__":
    main()
