"""`ragsweep gate`: fail when a rerun of an exported baseline (or a named run) is worse than it (results.gate)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragsweep.cli.store import store_tracker

DEFAULT_MAX_DROP = "5%"  # relative: an absolute 0.02 on a metric near 0.03 let a 63% drop through
DEFAULT_SIGNIFICANCE = "0.05"


def gate_command(args: argparse.Namespace) -> int:
    from ragsweep.results.exported import read_manifest
    from ragsweep.results.rerun import rerun
    from ragsweep.results.corrected import difference_line
    from ragsweep.results.gate import (FRESH_TIMING, TIMED, corrections, error_rate_note, gate_table, guarded_metrics,
                                       job_result, judge_line, latency_samples, on_compared, other_config)
    from ragsweep.results.gate_rows import parse_max_drop, parse_significance
    from ragsweep.results.question_sets import QuestionsChanged, same_questions
    from ragsweep.tracking.runs import markdown

    max_drop, significance = parse_max_drop(args.max_drop), parse_significance(args.significance)
    manifest = read_manifest(args.baseline)
    metrics = guarded_metrics(args.metrics, manifest)
    label = manifest.get("label") or manifest.get("config")
    baseline, baseline_hashes = _baseline_questions(args, manifest)
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
                   "corrected": result.corrected, "questions": result.questions}
        current_ms = result.latency
        what = "a rerun of the baseline config" + (" (search, rerank and answers timed afresh)" if timed else "")
    judged = judge_line(manifest, current["judge"], metrics)  # refuses judged metrics of two different judges
    try:
        compared = same_questions(baseline_hashes, current["questions"], args.on_changed_questions,
                                  ("the baseline", "the current run"), "gate a run on the baseline's questions, or "
                                  "export a new baseline on these with `ragsweep best` once a sweep has run them")
    except QuestionsChanged as error:
        print(f"ragsweep: gate failed: {error}", file=sys.stderr)
        return 1
    total = len(baseline)
    recorded, now, baseline, questions = on_compared(manifest["metrics"], current, baseline, compared)
    current = {**current, "metrics": now, "per_query": questions}
    corrected = corrections(manifest, current, baseline, metrics)
    table = gate_table(recorded, now, baseline, questions, metrics, max_drop, significance, corrected=corrected,
                       latency=(recorded_ms, current_ms))
    shared = sum(question in questions for question in baseline)
    print(f"Gate: {what} against {args.baseline} ({label}, run {manifest['run_id']}, dataset {manifest['dataset']})")
    print(f"fails when a metric drops by more than {max_drop}{' of its recorded value' if max_drop.relative else ''}"
          f" or a paired bootstrap on {'the' if shared == total else f'{shared} of the'} baseline's {total} questions"
          f" finds it worse at p < {significance:g}"
          + (f"; a latency percentile when it rose by more than {max_drop} and a bootstrap over each run's timed "
             f"questions finds it worse at p < {significance:g} (timings vary between runs of the same code)"
             if timed else "")
          + (f"\n{judged}" if judged else "") + "".join(f"\nnote: {line}" for line in compared.lines)
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


def _baseline_questions(args: argparse.Namespace, manifest: dict
                        ) -> tuple[dict[str, dict[str, float]], dict[str, str | None]]:
    """The baseline's per-question metrics and its questions' hashes: from the export's file, which CI has beside the
    config; from the baseline's run in the store only for an export written before `best` wrote that file."""
    from ragsweep.results.exported import exported_questions, questions_file, read_hashes
    from ragsweep.results.gate import job_result

    questions = exported_questions(args.baseline, manifest)
    if questions is not None:
        return questions, read_hashes(questions_file(args.baseline))
    missing = questions_file(args.baseline)
    redo = f"re-run `ragsweep best` to write {missing.name} and commit it beside {args.baseline.name}"
    tracker = store_tracker(args, manifest["experiment"],
                     f"{missing} is missing and there is no MLflow store at {{path}} to read the baseline's run "
                     f"from; {redo}")
    run = job_result(tracker, manifest["run_id"], "the baseline's run",
                     f"{missing} is missing, so gate reads the run from the store `ragsweep best` read: "
                     f"point --tracking-uri at it, or {redo}")
    return run["per_query"], run["questions"]


def add_question_option(parser: argparse.ArgumentParser, common: str) -> None:
    """--on-changed-questions: what a command comparing runs does when their questions differ
    (results.question_sets)."""
    from ragsweep.results.question_sets import CHOICES, COMPARE_COMMON, FAIL, OPTION

    parser.add_argument(OPTION, choices=CHOICES, default=FAIL,
                        help=f"when the runs' questions differ (removed, added, or a text or reference changed): "
                             f"{FAIL} (default) names them and fails; {COMPARE_COMMON}: {common}")


def add_commands(commands: argparse._SubParsersAction) -> None:
    """gate."""
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
    add_question_option(gate, "gate the questions the baseline and the current run both have unchanged")
    gate.set_defaults(command=gate_command)
