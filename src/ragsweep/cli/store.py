"""The store the commands read: the project's tracker (`--tracking`, MLflow by default) on the store its option names
under the project's mlruns/ unless --tracking-uri names another."""

from __future__ import annotations

import argparse

from ragsweep.runner.entry import conf_dirs
from ragsweep.tracking.base import RunStore
from ragsweep.tracking.options import open_tracker

NO_STORE = ("no MLflow store at {path}: run a sweep first (ragsweep sweep -m +sweep=quick) "
            "or point --tracking-uri at it")


def experiment_tracker(args: argparse.Namespace) -> RunStore:
    """The experiment's tracker; an error naming the experiments that exist when it does not."""
    from ragsweep.results.exported import ResultsError

    tracker = store_tracker(args, args.experiment)
    names = tracker.experiment_names()
    if args.experiment not in names:
        raise ResultsError(f"no experiment {args.experiment!r} in {tracker.uri}; experiments: "
                           f"{', '.join(names) or 'none (run a sweep first)'}")
    return tracker


def store_tracker(args: argparse.Namespace, experiment: str, refusal: str = NO_STORE) -> RunStore:
    """A tracker on the store, which must exist: ResultsError (`refusal`, `{path}` where it should be) when it does
    not, since reading it would make an empty store there, and when it cannot be opened."""
    from ragsweep.results.exported import ResultsError

    tracker = project_tracker(args, experiment)
    missing = tracker.missing()
    if missing is not None:
        raise ResultsError(refusal.format(path=missing.resolve()))
    problem = tracker.problem()
    if problem:
        raise ResultsError(problem.replace("tracking.uri", "--tracking-uri"))
    return tracker


def project_tracker(args: argparse.Namespace, experiment: str) -> RunStore:
    """The project's tracker (`--tracking`) on its store (`--tracking-uri`), for `experiment`."""
    from ragsweep.results.exported import ResultsError

    try:
        return open_tracker(args.tracking, conf_dirs(args.project), mlruns=(args.project / "mlruns").resolve(),
                            uri=args.tracking_uri, experiment=experiment,
                            artifacts=str(args.project / "mlruns" / "artifacts"))
    except ValueError as error:
        raise ResultsError(str(error)) from None


def existing_store_uri(args: argparse.Namespace, refusal: str = NO_STORE) -> str:
    """The store's URI, which must exist (see store_tracker)."""
    return store_tracker(args, "Default", refusal).uri

