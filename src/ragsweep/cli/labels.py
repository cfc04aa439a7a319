"""`ragsweep labels pull`: people's verdicts on judged claims, from MLflow's feedback to a `judge.labels` file."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from ragsweep.cli.store import experiment_tracker


def pull_command(args: argparse.Namespace) -> int:
    """Write every claim a person labelled on the experiment's traces; the same store gives the same file."""
    from ragsweep.results.best import ResultsError
    from ragsweep.tracking.labels import human_labels

    tracker = experiment_tracker(args)
    lines = human_labels(tracker.uri, args.experiment)
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
    print(f"{len(lines)} labelled claims ({labelled} supported) -> {args.out}; use it with judge.labels={args.out}")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    """labels pull."""
    labels = commands.add_parser("labels", help="people's verdicts on judged claims, through MLflow's feedback")
    actions = labels.add_subparsers(required=True, metavar="action")
    pull = actions.add_parser("pull", help="write the claims people labelled (overrides of support/<i> feedback on "
                                           "traces) as a judge.labels JSONL file")
    pull.add_argument("--experiment", default="ragsweep")
    pull.add_argument("--out", type=Path, required=True, help="the JSONL file to write (judge.labels reads it)")
    pull.set_defaults(command=pull_command)
