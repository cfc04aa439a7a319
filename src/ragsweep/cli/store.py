"""The MLflow store the commands read: the project's sqlite file unless --tracking-uri names another."""

from __future__ import annotations

import argparse
from pathlib import Path

from ragsweep.tracking.mlflow_tracker import MlflowTracker
from ragsweep.tracking.runs import experiment_names
from ragsweep.tracking.store import sqlite_store_problem

NO_STORE = ("no MLflow store at {path}: run a sweep first (ragsweep sweep -m +sweep=quick) "
            "or point --tracking-uri at it")


def experiment_tracker(args: argparse.Namespace) -> MlflowTracker:
    """The experiment's tracker; an error naming the experiments that exist when it does not."""
    from ragsweep.results.exported import ResultsError

    tracker = store_tracker(args, args.experiment)
    names = experiment_names(tracker)
    if args.experiment not in names:
        raise ResultsError(f"no experiment {args.experiment!r} in {tracker.uri}; experiments: "
                           f"{', '.join(names) or 'none (run a sweep first)'}")
    return tracker


def store_tracker(args: argparse.Namespace, experiment: str, refusal: str = NO_STORE) -> MlflowTracker:
    """A tracker on the store, which must exist (see existing_store_uri)."""
    return MlflowTracker(existing_store_uri(args, refusal), experiment, str(args.project / "mlruns" / "artifacts"))


def existing_store_uri(args: argparse.Namespace, refusal: str = NO_STORE) -> str:
    """The store's URI; ResultsError (`refusal`, `{path}` the file) when it names a sqlite file that does not
    exist, since MLflow would create an empty store there, and its folders, before finding nothing in it."""
    from ragsweep.results.exported import ResultsError

    uri = store_uri(args)
    database = Path(uri.removeprefix("sqlite:///")).resolve() if uri.startswith("sqlite:///") else None
    if database is not None and not database.is_file():
        raise ResultsError(refusal.format(path=database))
    problem = sqlite_store_problem(database) if database is not None else None
    if problem:
        raise ResultsError(problem.replace("tracking.uri", "--tracking-uri"))
    return uri


def store_uri(args: argparse.Namespace) -> str:
    return args.tracking_uri or f"sqlite:///{(args.project / 'mlruns' / 'mlflow.db').resolve()}"
