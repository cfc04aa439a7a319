"""`ragsweep labels sample | pull`: which judged claims people should label, and their verdicts as a `judge.labels`
file."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from ragsweep.cli.store import experiment_tracker

PLANNED_LABELS = (50, 100, 300)  # label counts whose expected interval width `labels sample` prints, with --n


def sample_command(args: argparse.Namespace) -> int:
    """Draw claims to label, stratified over judge score and configuration; give each a trace with its judge
    feedback and inclusion probability; print the draw, where to label, and what n labels buy."""
    from ragsweep.judging.calibration.draw import candidates, draw
    from ragsweep.results.exported import ResultsError
    from ragsweep.tracking.judged_runs import judged_runs

    if args.n < 1:
        raise ResultsError(f"--n {args.n}: give the number of claims to draw, 1 or more")
    tracker = experiment_tracker(args)
    try:
        runs = judged_runs(tracker)
    except ValueError as error:
        raise ResultsError(str(error)) from None
    population = [claim for run in runs for claim in candidates(run.run_id, run.records, run.threshold)]
    if not population:
        raise ResultsError(f"experiment {args.experiment!r} has no judged claim to draw: run a sweep with a generator "
                           "and a judge first (python sweep.py -m generator=extractive judge=lexical)")
    drawn = draw(population, args.n, args.seed)
    try:
        placed = tracker.place_draw(runs, drawn)
    except ValueError as error:
        raise ResultsError(str(error)) from None
    names = _short_names({run.run_id: run.label for run in runs})
    print(f"Drew {len(drawn.claims)} of {len(population)} judged claims of {len(runs)} configurations (seed "
          f"{args.seed}); a claim's inclusion probability is drawn / claims of its stratum:")
    print("\n".join(_strata_lines(drawn.strata, names)))
    print(f"Traces: {placed.new_traces} made now from per_query.jsonl, {placed.reused_traces} already there; each "
          "drawn claim's trace carries its support/<i> feedback and the tag ragsweep.inclusion.support/<i>.")
    print(f"Label them: `ragsweep ui`, experiment {args.experiment!r}, a run's Traces tab: on each trace tagged "
          "ragsweep.inclusion.support/<i>, override that feedback with yes or no; then `ragsweep labels pull "
          f"--experiment {args.experiment} --out labels.jsonl`.")
    print(_widths(tracker.human_labels(), runs, sorted({*PLANNED_LABELS, args.n})))
    return 0


def _short_names(labels: dict[str, str]) -> dict[str, str]:
    """Each run's configuration label without the settings every run shares (`k=2` for
    `chunker=fixed,k=2`), so the strata read at a glance; the whole label when that leaves nothing."""
    parts = {run_id: label.split(",") for run_id, label in labels.items()}
    shared = set.intersection(*(set(tokens) for tokens in parts.values())) if len(parts) > 1 else set()
    return {run_id: ",".join(token for token in tokens if token not in shared) or labels[run_id]
            for run_id, tokens in parts.items()}


def _strata_lines(strata: dict, names: dict[str, str]) -> list[str]:
    """`  judged unsupported  k=2: 1 of 3 (0.333)` per stratum, bins in order, configurations by name."""
    from ragsweep.judging.calibration.draw import BINS

    order = sorted(strata, key=lambda key: (BINS.index(key[0]), names[key[1]]))
    return [f"  {verdict:<18}  {names[run_id]}: {strata[verdict, run_id][1]} of {strata[verdict, run_id][0]}"
            f" ({strata[verdict, run_id][1] / strata[verdict, run_id][0]:.3g})" for verdict, run_id in order]


def _widths(lines: list[dict], runs: list, sizes: list[int]) -> str:
    """The expected 95% half-width of a configuration's corrected faithfulness for each label count, from the
    judge's error on the labels people already gave (median and widest over the configurations)."""
    from ragsweep.judging.calibration.draw import planned_half_widths

    found, problems, most = [], [], (0, 0)
    for run in runs:
        labelled = [(float(line["judge_score"]), line["label"], line.get("inclusion", 1.0)) for line in lines
                    if line.get("judge") == run.judge and line.get("judge_score") is not None]
        counts = (sum(label for _, label, _ in labelled), sum(1 - label for _, label, _ in labelled))
        most = max(most, counts, key=min)
        if min(counts) < 2:
            continue
        per_question = [record["metrics"]["faithfulness"] for record in run.records
                        if "faithfulness" in record.get("metrics", {})]
        try:
            found.append(planned_half_widths(labelled, run.threshold, per_question, sizes))
        except ValueError as error:  # a judge that does not separate the classes; too few judged questions
            problems.append(str(error))
    if not found:
        return (f"No expected interval widths: {problems[0]}" if problems else
                "Expected interval widths need a first few labels: at least 2 supported and 2 unsupported claims "
                f"of the runs' judge, labelled and pulled (now {most[0]} and {most[1]}); label, then sample again.")
    rows = [f"  {size:>4} labels: ±{statistics.median(w[size] for w in found):.3f}"
            f" (widest configuration ±{max(w[size] for w in found):.3f})" for size in sizes]
    return ("Expected 95% half-width of a configuration's corrected faithfulness, with the judge's error as the "
            "labels people gave so far measure it:\n" + "\n".join(rows))


def pull_command(args: argparse.Namespace) -> int:
    """Write every claim a person labelled on the experiment's traces; the same store gives the same file."""
    from ragsweep.results.exported import ResultsError

    tracker = experiment_tracker(args)
    lines = tracker.human_labels()
    if not lines:
        raise ResultsError(f"no claim of experiment {args.experiment!r} has a person's label yet: override a "
                           "support/<i> feedback on a trace in the MLflow UI (ragsweep ui), then pull again")
    text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=args.out.parent, prefix=f".{args.out.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, args.out)  # whole or not at all
    labelled = sum(line["label"] for line in lines)
    drawn = sum(line["inclusion"] < 1 for line in lines)
    print(f"{len(lines)} labelled claims ({labelled} supported; {drawn} drawn by `labels sample`) -> {args.out}; "
          f"use it with judge.labels={args.out}")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    """labels sample, labels pull."""
    labels = commands.add_parser("labels", help="people's verdicts on judged claims, through MLflow's feedback")
    actions = labels.add_subparsers(required=True, metavar="action")
    sample = actions.add_parser("sample", help="draw judged claims for people to label, stratified over judge score "
                                               "and configuration; give each a trace with its feedback and inclusion "
                                               "probability; print the expected interval width for n labels")
    sample.add_argument("--experiment", default="ragsweep")
    sample.add_argument("--n", type=int, default=100, help="claims to draw (default: 100)")
    sample.add_argument("--seed", type=int, default=0, help="the same seed draws the same claims (default: 0)")
    sample.set_defaults(command=sample_command)
    pull = actions.add_parser("pull", help="write the claims people labelled (overrides of support/<i> feedback on "
                                           "traces) as a judge.labels JSONL file, with their inclusion probabilities")
    pull.add_argument("--experiment", default="ragsweep")
    pull.add_argument("--out", type=Path, required=True, help="the JSONL file to write (judge.labels reads it)")
    pull.set_defaults(command=pull_command)
