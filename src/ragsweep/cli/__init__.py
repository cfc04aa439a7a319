"""`ragsweep COMMAND`: from a finished sweep to a config you can trust and guard.

Commands: best, report, diff, effects (results.py); gate (gate.py); calibrate, train-judge, align-judge
(judges.py); labels (labels.py); generate; sweep, estimate, init, constraints, docs (project.py); ui, server, sync
(serve.py).

Run from the project folder (the one with sweep.py and conf/); the store defaults to the one
sweep.py writes, sqlite:///mlruns/mlflow.db. One module per group of commands; each adds its own.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from pathlib import Path

import ragsweep  # noqa: F401  (offline defaults before MLflow loads)
from ragsweep.cli import gate, generate, judges, labels, project, results, serve
from ragsweep.disk import cannot_write, write_refused
from ragsweep.runner.entry import conf_dir

SIGNED_VALUE_OPTIONS = ("--max-drop", "--significance")  # the gate's own checks explain a negative value
_SIGNED = re.compile(r"^-[\d.]")


def main(argv: list[str] | None = None) -> int:
    """Run one command; a folder it cannot write (read-only, full, forbidden), the MLflow store's among them, ends
    it in one line, exit code 1."""
    try:
        return _command(sys.argv[1:] if argv is None else argv)
    except Exception as error:
        from ragsweep.tracking.store import full_store

        full = full_store(error)
        refused = full or write_refused(error)
        if refused is None:
            raise
        print(f"ragsweep: error: {cannot_write(refused, '--tracking-uri' if full else None)}", file=sys.stderr)
        return 1


def _command(argv: list[str]) -> int:
    if argv[:1] == ["sweep"] and argv[1:] not in (["-h"], ["--help"]):  # Hydra's command line, passed on whole
        from ragsweep.runner.entry import sweep

        sweep(argv[1:], conf_dir(Path.cwd()))
        return 0
    if argv[:1] == ["estimate"] and argv[1:] not in (["-h"], ["--help"]):  # a sweep's command line, whole
        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        return project.estimate(argv[1:], conf_dir(Path.cwd()))
    args = _parser().parse_args(_attach_signed_values(argv))
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from ragsweep.results.exported import ResultsError

    try:
        return args.command(args)
    except ResultsError as error:
        print(f"ragsweep: error: {error}", file=sys.stderr)
        return error.exit_code


def _attach_signed_values(argv: list[str]) -> list[str]:
    """`--max-drop -5%` as `--max-drop=-5%`. argparse takes a value that starts with '-' as an option unless
    it is a plain negative number (-5, not -5%), and then prints its usage instead of the gate's reason."""
    joined: list[str] = []
    for token in argv:
        if joined and joined[-1] in SIGNED_VALUE_OPTIONS and _SIGNED.match(token):
            joined[-1] = f"{joined[-1]}={token}"
        else:
            joined.append(token)
    return joined


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragsweep", description=__doc__.splitlines()[0])
    _add_store_options(parser, defaults=True)
    commands = parser.add_subparsers(required=True, metavar="command")
    for module in (results, gate, judges, labels, generate, project, serve):
        module.add_commands(commands)
    for command in set(commands.choices.values()):  # `ragsweep best --tracking-uri URI` as well as before `best`
        _add_store_options(command, defaults=False)
    return parser


def _add_store_options(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """--project, --tracking-uri and --tracking; after a command they default to nothing, so one given before it
    stands."""
    parser.add_argument("--project", type=Path, default=Path(".") if defaults else argparse.SUPPRESS,
                        help="folder with sweep.py and conf/ (default: .)")
    parser.add_argument("--tracking-uri", default=None if defaults else argparse.SUPPRESS,
                        help="MLflow store (default: sqlite:///<project>/mlruns/mlflow.db)")
    parser.add_argument("--tracking", default="mlflow" if defaults else argparse.SUPPRESS,
                        help="the conf/tracking option that reads the store (default: mlflow)")
