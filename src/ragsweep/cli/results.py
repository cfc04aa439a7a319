"""`ragsweep best | report | diff | effects`: rank finished runs, export the winner, compare runs, say which swept
setting moved a metric (`ragsweep gate` is cli/gate.py)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from ragsweep.cli.gate import add_question_option
from ragsweep.cli.store import experiment_tracker

RANKING_HELP = ("metric to rank by (default: answer_f1 when the runs differ in their generator or prompt, ndcg when "
                "in their reranker, else token_iou); faithfulness and groundedness rank by their value corrected by "
                "people's labels when every judged run has one (judge.labels)")


def best_command(args: argparse.Namespace) -> int:
    from ragsweep.results.best import best
    from ragsweep.results.exported import ResultsError
    from ragsweep.results.corrected import difference_line
    from ragsweep.results.rerun import compare, rerun
    from ragsweep.tracking.judges import judge_notes, summary_table
    from ragsweep.tracking.racing import stopped_lines
    from ragsweep.tracking.runs import markdown, tie_note

    if args.top < 1:
        raise ResultsError(f"--top {args.top}: give the number of rows to print, 1 or more")
    if args.pareto is not None:
        return _pareto_command(args)
    export = best(experiment_tracker(args), args.metric, args.project, args.name, args.where, args.dataset)
    print(_dataset_line(export.dataset, export.datasets, args.dataset))
    corrected = export.ranked_by != export.metric
    print(f"Top {min(args.top, len(export.table))} of {len(export.table)} configurations by "
          + (f"{export.ranked_by} (their {export.metric} corrected by people's labels)" if corrected
             else export.metric)
          + f"{'' if args.metric else ' (the metric of the stage they vary; --metric picks another)'}:\n")
    print(markdown(summary_table(export.table.head(args.top), export.ranked_by)))
    notes = [*judge_notes(export.table.head(args.top)), tie_note(export.table, export.ranked_by),
             difference_line(export.comparison) if export.comparison else None]
    for note in notes:
        if note:
            print(note + "\n")
    stopped = stopped_lines(experiment_tracker(args))
    if stopped:
        print("Stopped early in a race, not ranked (they did not run every question):\n"
              + "\n".join(f"  {line}" for line in stopped) + "\n")
    print(f"wrote {export.config}, {export.manifest.name} and {export.questions.name} (commit all three for "
          f"`ragsweep gate`); rerun with: "
          f"ragsweep sweep --config-name best/{export.config.stem}")
    if not args.verify:
        return 0
    from ragsweep.results.exported import exported_questions, read_hashes, read_manifest
    from ragsweep.results.question_sets import means_on, same_questions

    manifest = read_manifest(export.config)
    done = rerun(args.project, export.config)
    compared = same_questions(read_hashes(export.questions), done.questions, args.on_changed_questions,
                              ("the recorded run", "the rerun"), "the dataset changed since the runs `best` ranked: "
                              "sweep again on it, then export and verify")
    recorded, current = manifest["metrics"], done.metrics
    if compared.changes.differ:  # compare-common: the per-question metrics' means on the unchanged questions
        recorded = means_on(exported_questions(export.config, manifest) or {}, compared.questions)
        current = means_on(done.per_query, compared.questions)
    table = compare(recorded, current)
    for line in compared.lines:
        print(f"note: {line}")
    print("\nVerification rerun (exact match required):\n" + markdown(table))
    if not table.ok.all():
        print(f"ragsweep: error: the rerun differs from run {manifest['run_id']} in "
              f"{', '.join(table.metric[~table.ok])}", file=sys.stderr)
        return 1
    print("verified: every metric of the rerun equals the recorded run")
    return 0


def _pareto_command(args: argparse.Namespace) -> int:
    from ragsweep.metrics import registry
    from ragsweep.results.exported import ResultsError
    from ragsweep.results.pareto import pareto
    from ragsweep.tracking.racing import stopped_lines
    from ragsweep.tracking.runs import markdown

    for given, option in ((args.metric, "--metric"), (args.verify, "--verify")):
        if given:
            raise ResultsError(f"--pareto exports every point of the front, {option} is for one winner: give one of "
                               "them; rerun a point with ragsweep sweep --config-name best/<name>_pareto_<i>")
    front = pareto(experiment_tracker(args), args.pareto, args.project, args.name, args.where, args.dataset)
    print(_dataset_line(front.dataset, front.datasets, args.dataset))
    over = ", ".join(f"{m} ({'higher' if registry.metric(m).direction == 'maximize' else 'lower'} is better)"
                     for m in front.metrics)
    print(f"Pareto front of {front.considered} configurations over {over}: the {len(front.table)} that no other "
          "beats on every metric at once\n")
    print(markdown(front.table))
    if front.left_out:
        print(f"left out, without every metric ({len(front.left_out)}):\n"
              + "\n".join(f"  {line}" for line in front.left_out) + "\n")
    for line in front.ties:
        print(f"note: {line}")
    timed = [m for m in front.metrics if not registry.metric(m).deterministic]
    if timed:
        print(f"note: {', '.join(timed)} {'is a timing' if len(timed) == 1 else 'are timings'} of each run on "
              "this machine (a reused run keeps its recorded time): a rerun can move a point on or off the front\n")
    stopped = stopped_lines(experiment_tracker(args))
    if stopped:
        print("Stopped early in a race, not on the front (they did not run every question):\n"
              + "\n".join(f"  {line}" for line in stopped) + "\n")
    if front.removed:
        print(f"removed {', '.join(path.name for path in front.removed)} (points of an earlier, longer front)")
    print(f"wrote {len(front.exports)} export{'s' if len(front.exports) > 1 else ''} in {front.exports[0].parent}: "
          + ", ".join(path.name for path in front.exports)
          + " (each with its manifest and per-question file; commit them for `ragsweep gate`); rerun one with: "
          f"ragsweep sweep --config-name best/{front.exports[0].stem}")
    return 0


def report_command(args: argparse.Namespace) -> int:
    from ragsweep.results.report import write_report
    from ragsweep.tracking.sweep import attach_to_latest_sweep

    tracker = experiment_tracker(args)
    output = args.output or args.project / "reports" / f"{args.experiment}.html"
    report = write_report(tracker, args.metric, output, args.dataset,
                          on_changed_questions=args.on_changed_questions)
    print(_dataset_line(report.dataset, report.datasets, args.dataset))
    parent = attach_to_latest_sweep(tracker, report.path)
    print(f"wrote {report.path}, ranked by {report.metric}" + (f", and logged it to sweep run {parent}" if parent
                                                                 else ""))
    return 0


def diff_command(args: argparse.Namespace) -> int:
    from ragsweep.results.exported import ResultsError
    from ragsweep.results.diff import diff_runs, write_html

    if args.top < 1:
        raise ResultsError(f"--top {args.top}: give the number of questions to print, 1 or more")
    found = diff_runs(experiment_tracker(args), args.run_a, args.run_b, args.metric, args.on_changed_questions)
    for line in found.notes:
        print(f"note: {line}")
    print(found.text(args.top))
    if len(found.table) > args.top:
        print(f"... {len(found.table) - args.top} more questions: --top N, or the HTML page")
    output = args.output or args.project / "reports" / f"diff-{args.run_a[:8]}-{args.run_b[:8]}.html"
    print(f"wrote {write_html(found, output)}")
    return 0


def effects_command(args: argparse.Namespace) -> int:
    from ragsweep.results.effects import display_table, sweep_effects, to_json
    from ragsweep.tracking.runs import markdown

    tracker = experiment_tracker(args)
    found = sweep_effects(tracker, args.sweep, args.metric, args.dataset)
    effects = found.effects
    print(_dataset_line(found.dataset, found.datasets, args.dataset, "the sweep's"))
    why = "" if found.asked_metric else " (the metric the sweep ranks by; --metric picks another)"
    text = (f"Effects on {found.metric}{why} of the settings sweep run {found.sweep} varied, across its "
            f"{effects.configurations} configurations:\n\n{effects.model_line()}\n\n{markdown(display_table(effects))}"
            + "".join(f"\n{note}\n" for note in effects.notes()))
    print(text)
    with tempfile.TemporaryDirectory(prefix="ragsweep-effects-") as folder:
        files = [Path(folder) / "effects.json", Path(folder) / "effects.md"]
        files[0].write_text(to_json(found))
        files[1].write_text(f"# Effects on {found.metric}, dataset {found.dataset}\n\n{text}")
        tracker.attach(found.sweep, *files)
    print(f"logged effects.json and effects.md to sweep run {found.sweep}")
    return 0


def _dataset_line(dataset: str, datasets: list[str], asked: str | None, whose: str = "the experiment's") -> str:
    """Which dataset's runs a command compared, and how to pick another."""
    others = [name for name in datasets if name != dataset]
    why = "as --dataset asks" if asked else f"the dataset of {whose} newest run"
    return f"dataset {dataset} ({why})" + (f"; also runs on {', '.join(others)}: --dataset NAME" if others else "")


def add_commands(commands: argparse._SubParsersAction) -> None:
    """best, report, diff and effects."""
    best = commands.add_parser("best", help="rank finished runs and export the best as conf/best/<name>.yaml")
    best.add_argument("--experiment", default="ragsweep")
    best.add_argument("--metric", help=RANKING_HELP)
    best.add_argument("--top", type=int, default=5, help="rows of the ranked table to print")
    best.add_argument("--where", help='filter, e.g. "params.k <= 10 and params.chunker = fixed" (numbers compare as '
                                      'numbers; text takes = and !=)')
    best.add_argument("--name", help="file name under conf/best/ (default: the experiment's name)")
    best.add_argument("--dataset", help="rank the runs on this dataset (default: the newest run's dataset)")
    best.add_argument("--verify", action="store_true", help="rerun the export; fail unless every metric matches")
    add_question_option(best, "--verify compares the per-question metrics' means on the questions the recorded run "
                              "and the rerun both have unchanged")
    best.add_argument("--pareto", metavar="M1,M2[,M3]",
                      help="list the configurations no other beats on all these metrics at once, each in the "
                           "direction the metric registry gives it (lower is better for latency and tokens), and "
                           "export each as conf/best/<name>_pareto_<i>.yaml")
    best.set_defaults(command=best_command)
    report = commands.add_parser("report", help="write an HTML comparison report and log it to the latest sweep")
    report.add_argument("--experiment", default="ragsweep")
    report.add_argument("--metric", help=RANKING_HELP)
    report.add_argument("--output", type=Path, help="HTML file (default: reports/<experiment>.html)")
    report.add_argument("--dataset", help="report the runs on this dataset (default: the newest run's dataset)")
    add_question_option(report, "test the best configuration against each runner-up on the questions both have "
                                "unchanged")
    report.set_defaults(command=report_command)
    diff = commands.add_parser("diff", help="two runs question by question: answers, metrics and retrieved spans, "
                                            "largest difference first (text and HTML)")
    diff.add_argument("run_a", help="a job run's id (the run_id column of `ragsweep best`)")
    diff.add_argument("run_b", help="the run to compare it with")
    diff.add_argument("--experiment", default="ragsweep")
    diff.add_argument("--metric", help="per-question metric to sort by (default: answer_f1 when both runs answered, "
                                       "else token_iou)")
    diff.add_argument("--top", type=int, default=10, help="questions to print (the HTML page has all)")
    diff.add_argument("--output", type=Path, help="HTML file (default: reports/diff-<A>-<B>.html)")
    add_question_option(diff, "show the questions both runs have unchanged")
    diff.set_defaults(command=diff_command)
    effects = commands.add_parser("effects", help="which swept setting moved a metric, and by how much: main effects "
                                                  "and two-way interactions with 95%% intervals, logged to the sweep")
    effects.add_argument("--experiment", default="ragsweep")
    effects.add_argument("--sweep", help="a sweep's parent run id (default: the experiment's newest sweep)")
    effects.add_argument("--metric", help="a per-question metric (default: the one the sweep ranks by: its "
                                          "optimized_metric, the metric it raced on, else as `best` chooses)")
    effects.add_argument("--dataset", help="the sweep's runs on this dataset (default: its newest run's dataset)")
    effects.set_defaults(command=effects_command)
