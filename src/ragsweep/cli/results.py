"""`ragsweep best | report | diff | gate | effects`: rank finished runs, export the winner, compare runs, guard a
baseline, say which swept setting moved a metric."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from ragsweep.cli.store import experiment_tracker, store_tracker

DEFAULT_MAX_DROP = "5%"  # relative: an absolute 0.02 on a metric near 0.03 let a 63% drop through
DEFAULT_SIGNIFICANCE = "0.05"
RANKING_HELP = ("metric to rank by (default: answer_f1 when the runs differ in their generator or prompt, ndcg when "
                "in their reranker, else token_iou); faithfulness and groundedness rank by their value corrected by "
                "people's labels when every judged run has one (judge.labels)")


def best_command(args: argparse.Namespace) -> int:
    from ragsweep.results.best import ResultsError, best
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
    from ragsweep.results.best import read_manifest

    manifest = read_manifest(export.config)
    table = compare(manifest["metrics"], rerun(args.project, export.config).metrics)
    print("\nVerification rerun (exact match required):\n" + markdown(table))
    if not table.ok.all():
        print(f"ragsweep: error: the rerun differs from run {manifest['run_id']} in "
              f"{', '.join(table.metric[~table.ok])}", file=sys.stderr)
        return 1
    print("verified: every metric of the rerun equals the recorded run")
    return 0


def _pareto_command(args: argparse.Namespace) -> int:
    from ragsweep.metrics import registry
    from ragsweep.results.best import ResultsError
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
    report = write_report(tracker, args.metric, output, args.dataset)
    print(_dataset_line(report.dataset, report.datasets, args.dataset))
    parent = attach_to_latest_sweep(tracker, report.path)
    print(f"wrote {report.path}, ranked by {report.metric}" + (f", and logged it to sweep run {parent}" if parent
                                                                 else ""))
    return 0


def diff_command(args: argparse.Namespace) -> int:
    from ragsweep.results.best import ResultsError
    from ragsweep.results.diff import diff_runs, write_html

    if args.top < 1:
        raise ResultsError(f"--top {args.top}: give the number of questions to print, 1 or more")
    found = diff_runs(experiment_tracker(args), args.run_a, args.run_b, args.metric)
    print(found.text(args.top))
    if len(found.table) > args.top:
        print(f"... {len(found.table) - args.top} more questions: --top N, or the HTML page")
    output = args.output or args.project / "reports" / f"diff-{args.run_a[:8]}-{args.run_b[:8]}.html"
    print(f"wrote {write_html(found, output)}")
    return 0


def effects_command(args: argparse.Namespace) -> int:
    from ragsweep.results.effects import display_table, sweep_effects, to_json
    from ragsweep.tracking.runs import markdown
    from ragsweep.tracking.sweep import attach

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
        attach(tracker, found.sweep, files)
    print(f"logged effects.json and effects.md to sweep run {found.sweep}")
    return 0


def _dataset_line(dataset: str, datasets: list[str], asked: str | None, whose: str = "the experiment's") -> str:
    """Which dataset's runs a command compared, and how to pick another."""
    others = [name for name in datasets if name != dataset]
    why = "as --dataset asks" if asked else f"the dataset of {whose} newest run"
    return f"dataset {dataset} ({why})" + (f"; also runs on {', '.join(others)}: --dataset NAME" if others else "")


def gate_command(args: argparse.Namespace) -> int:
    from ragsweep.results.best import read_manifest
    from ragsweep.results.rerun import rerun
    from ragsweep.results.corrected import difference_line
    from ragsweep.results.gate import (FRESH_TIMING, TIMED, corrections, error_rate_note, gate_table,
                                       guarded_metrics, job_result, judge_line, latency_samples, other_config,
                                       parse_max_drop, parse_significance)
    from ragsweep.tracking.runs import markdown

    max_drop, significance = parse_max_drop(args.max_drop), parse_significance(args.significance)
    manifest = read_manifest(args.baseline)
    metrics = guarded_metrics(args.metrics, manifest)
    label = manifest.get("label") or manifest.get("config")
    baseline = _baseline_questions(args, manifest)
    timed = any(metric in TIMED for metric in metrics)
    recorded_ms = (latency_samples(store_tracker(args, manifest["experiment"]), manifest["run_id"],
                                   "the baseline's run") if timed else {})
    if args.run:
        tracker = store_tracker(args, manifest["experiment"])
        current = job_result(tracker, args.run, "--run")
        if other_config(current, manifest, args.allow_other_config):
            print(f"note: --allow-other-config: gating {current['label']} against another configuration")
        current_ms = latency_samples(tracker, args.run, "--run") if timed else {}
        what = f"run {args.run} ({current['label']})"
    else:
        result = rerun(args.project, args.baseline, "gate", [FRESH_TIMING] if timed else [])
        current = {"metrics": result.metrics, "per_query": result.per_query, "judge": result.judge,
                   "corrected": result.corrected}
        current_ms = result.latency
        what = "a rerun of the baseline config" + (" (search, rerank and answers timed afresh)" if timed else "")
    judged = judge_line(manifest, current["judge"], metrics)  # refuses judged metrics of two different judges
    corrected = corrections(manifest, current, baseline, metrics)
    table = gate_table(manifest["metrics"], current["metrics"], baseline, current["per_query"],
                       metrics, max_drop, significance, corrected=corrected, latency=(recorded_ms, current_ms))
    shared, total = sum(question in current["per_query"] for question in baseline), len(baseline)
    print(f"Gate: {what} against {args.baseline} ({label}, run {manifest['run_id']}, dataset {manifest['dataset']})")
    print(f"fails when a metric drops by more than {max_drop}{' of its recorded value' if max_drop.relative else ''}"
          f" or a paired bootstrap on {'the' if shared == total else f'{shared} of the'} baseline's {total} questions"
          f" finds it worse at p < {significance:g}"
          + (f"; a latency percentile when it rose by more than {max_drop} and a bootstrap over each run's timed "
             f"questions finds it worse at p < {significance:g} (timings vary between runs of the same code)"
             if timed else "")
          + (f"\n{judged}" if judged else "")
          + ("\nfaithfulness and groundedness corrected by the same people's labels in both runs: the same checks "
             "on their corrected paired difference and its normal interval (labels: how many it rests on)"
             if "labels" in table else "") + "\n")
    print(markdown(table.drop(columns=["ok", "paired"])))
    for found in corrected.values():
        if found.difference is not None:
            print(difference_line(found))
        elif found.note:
            print(f"{found.metric}: gated by the paired bootstrap on the judge's values; {found.note}")
    bootstrapped = table[table["labels"] == ""] if "labels" in table else table
    for row in bootstrapped[(bootstrapped.paired < shared) & ~bootstrapped.metric.isin([*TIMED])].to_dict("records"):  # answer metrics: answered questions
        print(f"{row['metric']}: the bootstrap paired the {row['paired']} of those {shared} questions that have it "
              "in both runs (a failed generation or a question without reference answers has none)")
    note = error_rate_note(manifest["metrics"], current["metrics"], metrics)
    if note:
        print(note)
    if not table.ok.all():
        print("ragsweep: gate failed: " + "; ".join(
            f"{row['metric']} ({row['change %'] or row['change']}, p {row['p-value']}) "
            f"{row['verdict'].removeprefix('FAIL: ')}" for row in table[~table.ok].to_dict("records")), file=sys.stderr)
        return 1
    print("gate passed")
    return 0


def _baseline_questions(args: argparse.Namespace, manifest: dict) -> dict[str, dict[str, float]]:
    """The baseline's per-question metrics: from the export's file, which CI has beside the config; from the
    baseline's run in the store only for an export written before `best` wrote that file."""
    from ragsweep.results.best import exported_questions, questions_file
    from ragsweep.results.gate import job_result

    questions = exported_questions(args.baseline, manifest)
    if questions is not None:
        return questions
    missing = questions_file(args.baseline)
    redo = f"re-run `ragsweep best` to write {missing.name} and commit it beside {args.baseline.name}"
    tracker = store_tracker(args, manifest["experiment"],
                     f"{missing} is missing and there is no MLflow store at {{path}} to read the baseline's run "
                     f"from; {redo}")
    return job_result(tracker, manifest["run_id"], "the baseline's run",
                      f"{missing} is missing, so gate reads the run from the store `ragsweep best` read: "
                      f"point --tracking-uri at it, or {redo}")["per_query"]


def add_commands(commands: argparse._SubParsersAction) -> None:
    """best, report, diff, gate and effects."""
    best = commands.add_parser("best", help="rank finished runs and export the best as conf/best/<name>.yaml")
    best.add_argument("--experiment", default="ragsweep")
    best.add_argument("--metric", help=RANKING_HELP)
    best.add_argument("--top", type=int, default=5, help="rows of the ranked table to print")
    best.add_argument("--where", help='filter, e.g. "params.k <= 10 and params.chunker = fixed" (numbers compare as '
                                      'numbers; text takes = and !=)')
    best.add_argument("--name", help="file name under conf/best/ (default: the experiment's name)")
    best.add_argument("--dataset", help="rank the runs on this dataset (default: the newest run's dataset)")
    best.add_argument("--verify", action="store_true", help="rerun the export; fail unless every metric matches")
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
    diff.set_defaults(command=diff_command)
    gate = commands.add_parser("gate", help="fail when a rerun is worse than an exported baseline")
    gate.add_argument("--baseline", type=Path, required=True, help="conf/best/<name>.yaml written by `best`")
    gate.add_argument("--max-drop", default=DEFAULT_MAX_DROP,
                      help=f"largest allowed drop of a mean: a share of the recorded value like 5%% or an absolute "
                           f"value like 0.02 (default {DEFAULT_MAX_DROP.replace('%', '%%')}); for faithfulness or "
                           "groundedness corrected by the same people's labels in both runs, of the corrected value")
    gate.add_argument("--significance", default=DEFAULT_SIGNIFICANCE,
                      help="fail when a paired bootstrap on the baseline's questions finds the current run worse "
                           f"at p below this (default {DEFAULT_SIGNIFICANCE}); faithfulness or groundedness corrected "
                           "by the same people's labels in both runs are tested by their corrected paired difference")
    gate.add_argument("--metrics", help="comma-separated metrics to guard, each in its own direction (default: the "
                                        "baseline's ranking metric); latency_ms_p95 and the other latency percentiles "
                                        "retime the rerun afresh; generation_error_rate fails on a rise")
    gate.add_argument("--run", help="compare this MLflow run instead of rerunning the baseline")
    gate.add_argument("--allow-other-config", action="store_true",
                      help="let --run be another configuration than the baseline's (other config fingerprint)")
    gate.set_defaults(command=gate_command)
    effects = commands.add_parser("effects", help="which swept setting moved a metric, and by how much: main effects "
                                                  "and two-way interactions with 95%% intervals, logged to the sweep")
    effects.add_argument("--experiment", default="ragsweep")
    effects.add_argument("--sweep", help="a sweep's parent run id (default: the experiment's newest sweep)")
    effects.add_argument("--metric", help="a per-question metric (default: the one the sweep ranks by: its "
                                          "optimized_metric, the metric it raced on, else as `best` chooses)")
    effects.add_argument("--dataset", help="the sweep's runs on this dataset (default: its newest run's dataset)")
    effects.set_defaults(command=effects_command)
