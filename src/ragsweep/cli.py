"""`ragsweep best | report | gate | ui`: from a finished sweep to a config you can trust and guard.

Run from the project folder (the one with sweep.py and conf/); the store defaults to the one
sweep.py writes, sqlite:///mlruns/mlflow.db.
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
from pathlib import Path

import ragsweep  # noqa: F401  (offline defaults before MLflow loads)
from ragsweep.tracking.mlflow_tracker import MlflowTracker
from ragsweep.tracking.runs import DEFAULT_RANKING_METRIC

log = logging.getLogger("ragsweep")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from ragsweep.results.best import ResultsError

    try:
        return args.command(args)
    except ResultsError as error:
        print(f"ragsweep: error: {error}", file=sys.stderr)
        return 2


def best_command(args: argparse.Namespace) -> int:
    from ragsweep.results.best import ResultsError, best, compare, rerun
    from ragsweep.tracking.runs import markdown, summary_table

    if args.top < 1:
        raise ResultsError(f"--top {args.top}: give the number of rows to print, 1 or more")
    export = best(_tracker(args), args.metric, args.project, args.name, args.where, args.dataset)
    print(_dataset_line(export.dataset, export.datasets, args.dataset))
    print(f"Top {min(args.top, len(export.table))} of {len(export.table)} configurations by {args.metric}:\n")
    print(markdown(summary_table(export.table.head(args.top), args.metric)))
    print(f"wrote {export.config} and {export.manifest.name}; rerun with: "
          f"python sweep.py --config-name best/{export.config.stem}")
    if not args.verify:
        return 0
    from ragsweep.results.best import read_manifest

    manifest = read_manifest(export.config)
    table = compare(manifest["metrics"], rerun(args.project, export.config).metrics, exact=True)
    print("\nVerification rerun (exact match required):\n" + markdown(table))
    if not table.ok.all():
        print(f"ragsweep: error: the rerun differs from run {manifest['run_id']} in "
              f"{', '.join(table.metric[~table.ok])}", file=sys.stderr)
        return 1
    print("verified: every metric of the rerun equals the recorded run")
    return 0


def report_command(args: argparse.Namespace) -> int:
    from ragsweep.results.report import write_report

    tracker = _tracker(args)
    output = args.output or args.project / "reports" / f"{args.experiment}.html"
    report = write_report(tracker, args.metric, output, args.dataset)
    print(_dataset_line(report.dataset, report.datasets, args.dataset))
    parent = tracker.attach_to_latest_sweep(report.path)
    print(f"wrote {report.path}" + (f" and logged it to sweep run {parent}" if parent else ""))
    return 0


def _dataset_line(dataset: str, datasets: list[str], asked: str | None) -> str:
    """Which dataset's runs a command compared, and how to pick another."""
    others = [name for name in datasets if name != dataset]
    why = "as --dataset asks" if asked else "the dataset of the experiment's newest run"
    return f"dataset {dataset} ({why})" + (f"; also runs on {', '.join(others)}: --dataset NAME" if others else "")


def gate_command(args: argparse.Namespace) -> int:
    from ragsweep.results.best import compare, read_manifest, rerun
    from ragsweep.tracking.runs import markdown

    manifest = read_manifest(args.baseline)
    metrics = args.metrics.split(",") if args.metrics else [manifest["metric"]]
    unknown = [m for m in metrics if m not in manifest["metrics"]]
    if unknown:
        print(f"ragsweep: error: --metrics {', '.join(unknown)} not in the baseline; it has "
              f"{', '.join(manifest['metrics'])}", file=sys.stderr)
        return 2
    if args.run:
        current = dict(MlflowTracker(_uri(args), "unused", "").client().get_run(args.run).data.metrics)
    else:
        current = rerun(args.project, args.baseline)
    table = compare({m: manifest["metrics"][m] for m in metrics}, current, max_drop=args.max_drop)
    print(f"Gate against {args.baseline} (run {manifest['run_id']}), max drop {args.max_drop}:\n")
    print(markdown(table))
    if not table.ok.all():
        print(f"ragsweep: gate failed: {', '.join(table.metric[~table.ok])} dropped by more than {args.max_drop}",
              file=sys.stderr)
        return 1
    print("gate passed")
    return 0


def ui_command(args: argparse.Namespace) -> int:
    uri = _uri(args)
    print(f"MLflow UI for {uri}: http://127.0.0.1:{args.port}  (Ctrl-C stops it)", flush=True)
    command = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri,
               "--host", "127.0.0.1", "--port", str(args.port), "--workers", "1"]
    try:
        return subprocess.run(command).returncode
    except KeyboardInterrupt:
        return 0


def _tracker(args: argparse.Namespace) -> MlflowTracker:
    """The experiment's tracker; an error naming the experiments that exist when it does not."""
    from ragsweep.results.best import ResultsError

    tracker = MlflowTracker(_uri(args), args.experiment, str(args.project / "mlruns" / "artifacts"))
    if tracker.client().get_experiment_by_name(args.experiment) is None:
        names = [e.name for e in tracker.client().search_experiments()]
        raise ResultsError(f"no experiment {args.experiment!r} in {tracker.uri}; experiments: "
                           f"{', '.join(names) or 'none (run a sweep first)'}")
    return tracker


def _uri(args: argparse.Namespace) -> str:
    return args.tracking_uri or f"sqlite:///{(args.project / 'mlruns' / 'mlflow.db').resolve()}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragsweep", description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=Path("."), help="folder with sweep.py and conf/ (default: .)")
    parser.add_argument("--tracking-uri", help="MLflow store (default: sqlite:///<project>/mlruns/mlflow.db)")
    commands = parser.add_subparsers(required=True, metavar="command")

    best = commands.add_parser("best", help="rank finished runs and export the best as conf/best/<name>.yaml")
    best.add_argument("--experiment", default="ragsweep")
    best.add_argument("--metric", default=DEFAULT_RANKING_METRIC)
    best.add_argument("--top", type=int, default=5, help="rows of the ranked table to print")
    best.add_argument("--where", help='filter, e.g. "params.k <= 10 and params.chunker = fixed" (numbers compare as '
                                      'numbers; text takes = and !=)')
    best.add_argument("--name", help="file name under conf/best/ (default: the experiment's name)")
    best.add_argument("--dataset", help="rank the runs on this dataset (default: the newest run's dataset)")
    best.add_argument("--verify", action="store_true", help="rerun the export; fail unless every metric matches")
    best.set_defaults(command=best_command)

    report = commands.add_parser("report", help="write an HTML comparison report and log it to the latest sweep")
    report.add_argument("--experiment", default="ragsweep")
    report.add_argument("--metric", default=DEFAULT_RANKING_METRIC)
    report.add_argument("--output", type=Path, help="HTML file (default: reports/<experiment>.html)")
    report.add_argument("--dataset", help="report the runs on this dataset (default: the newest run's dataset)")
    report.set_defaults(command=report_command)

    gate = commands.add_parser("gate", help="fail when a rerun's metrics drop below an exported baseline")
    gate.add_argument("--baseline", type=Path, required=True, help="conf/best/<name>.yaml written by `best`")
    gate.add_argument("--max-drop", type=float, default=0.02, help="largest allowed absolute drop (default 0.02)")
    gate.add_argument("--metrics", help="comma-separated metrics to guard (default: the baseline's ranking metric)")
    gate.add_argument("--run", help="compare this MLflow run instead of rerunning the baseline")
    gate.set_defaults(command=gate_command)

    ui = commands.add_parser("ui", help="start the MLflow UI on the project's store (127.0.0.1, one worker)")
    ui.add_argument("--port", type=int, default=5000)
    ui.set_defaults(command=ui_command)
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
