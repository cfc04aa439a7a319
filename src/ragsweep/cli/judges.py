"""`ragsweep calibrate | train-judge`: measure a judge against labelled claims; train the `trained` judge."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragsweep.cli.store import project_tracker
from ragsweep.runner.entry import conf_dir, conf_dirs, ensure_project_config



def calibrate_command(args: argparse.Namespace) -> int:
    """Judge two labelled claims sets, print held-out and in-sample agreement, write calibration/<judge>.json,
    log it to MLflow."""
    from ragsweep.judging.calibration.calibrate import (calibrate, cross_corpus, format_cross, format_table,
                                              write_calibration)
    from ragsweep.runner.standalone_judges import build_judge, check_judge_option
    from ragsweep.tracking.calibration import EXPERIMENT, log_calibration

    try:
        if args.limit is not None and args.limit < 1:
            raise ValueError(f"--limit {args.limit}: give the number of claims to judge, 1 or more")
        check_judge_option(conf_dirs(args.project), args.judge)
        sets = _claims_sets(args)
        judge, config = build_judge(conf_dir(args.project), args.judge, args.overrides,
                                    [claim for _, claims in sets for claim in claims], args.project)
        sets = [(label, claims[: args.limit]) for label, claims in sets]
        cross = cross_corpus(judge, sets, args.judge, config) if len(sets) == 2 else None
        result = cross.in_sample[0] if cross else calibrate(judge, sets[0][1], args.judge, sets[0][0], config)
    except (ValueError, OSError) as error:  # a bad file or setting; a judge's model that cannot load
        print(f"ragsweep: error: {error}", file=sys.stderr)
        return 2
    path = write_calibration(result, args.out, cross)
    run_id = log_calibration(project_tracker(args, EXPERIMENT), result, path, cross)
    use = None
    if callable(getattr(judge, "fit", None)):  # the ensemble: its fitted weights become a judge option
        from omegaconf import OmegaConf

        from ragsweep.judging.ensemble import write_fitted
        from ragsweep.runner.standalone_judges import compose_with_judge

        name = args.judge if args.judge.endswith("_fitted") else f"{args.judge}_fitted"
        composed = compose_with_judge(conf_dir(args.project), args.judge, args.overrides, args.project)
        ensure_project_config(args.project)  # so that `ragsweep sweep` here finds the option written
        raw = OmegaConf.to_container(composed.judge, resolve=False)
        auc = cross.auc if cross else result.auc
        fitted = write_fitted(args.project / "conf" / "judge" / f"{name}.yaml", raw, judge, result.threshold,
                              auc, result.claims_file, judge.in_sample_auc, args.judge)
        print(f"fitted weights {judge.weights}, bias {judge.bias}; AUC {auc:.3f} "
              f"({'held out' if cross else 'out of fold'}; in-sample {judge.in_sample_auc:.3f}); wrote {fitted}")
        use = f"judge={name}"
    if cross is None:
        print(format_table(result, use))
    else:  # held-out figures first; the fitting set's in-sample detail per kind after them, labelled so
        detail = format_table(result).splitlines()[:-1]
        print(format_cross(cross, use) + "\n\nin sample, per kind, on the set it was fitted on:\n" + "\n".join(detail))
    print(f"wrote {path}; logged as run {run_id} of the MLflow experiment {EXPERIMENT!r}")
    return 0


def _claims_sets(args: argparse.Namespace) -> list[tuple[str, list]]:
    """The claims to fit on (--claims, default the shipped sotu set) and, unless `--heldout none`, the set to
    measure on (--heldout, default the shipped chroma_general set, its corpora under paths.data)."""
    from ragsweep.judging.calibration.labelled_claims import (HELDOUT_DOCUMENTS, default_claims, heldout_claims,
                                                              load_claims)

    fit = args.claims or default_claims()
    sets = [(str(fit), load_claims(fit, args.documents))]
    if str(args.heldout) == "none":
        return sets
    held = Path(args.heldout) if args.heldout else heldout_claims()
    documents = args.documents if args.heldout else _data_dir(args) / HELDOUT_DOCUMENTS
    if held.resolve() == Path(fit).resolve():
        raise ValueError(f"--heldout {held} is the --claims file: held-out figures need another claims set "
                         "(or --heldout none for in-sample figures only)")
    try:
        sets.append((str(held), load_claims(held, documents)))
    except ValueError as error:
        if args.heldout:
            raise
        raise ValueError(f"the held-out claims cite chroma_general's corpora, expected in {documents} "
                         f"(paths.data={_data_dir(args)}); set paths.data=FOLDER, or --heldout none for in-sample "
                         f"figures only ({error})") from None
    return sets


def _data_dir(args: argparse.Namespace) -> Path:
    """`paths.data` of the project's config (with any paths.* override)."""
    from ragsweep.runner.compose import compose_config

    overrides = [f"paths.root={args.project.resolve()}", *(o for o in args.overrides if o.startswith("paths."))]
    return Path(str(compose_config(conf_dir(args.project), overrides, job=False).paths.data))


def train_judge_command(args: argparse.Namespace) -> int:
    """Build the `trained` judge for a corpus (conf/judge/trained.yaml's settings) or find it in the cache."""
    import json
    import time

    from ragsweep.data.loading import loaded
    from ragsweep.judging.training.synthetic import claims_passages
    from ragsweep.runner.standalone_judges import build_judge

    overrides = [*([f"dataset={args.dataset}"] if args.dataset else []),
                 *(f"judge.{key}={value}" for key, value in (("examples", args.examples), ("epochs", args.epochs))
                   if value is not None)]
    try:
        passages = claims_passages(args.claims) if args.claims else None
        judge, _ = build_judge(conf_dir(args.project), "trained", overrides, root=args.project, passages=passages)
        corpus = None if args.claims else loaded(judge.dataset)
        started = time.perf_counter()
        path = judge.build()
    except (ValueError, OSError) as error:
        print(f"ragsweep: error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    what = f"{len(judge.texts)} passages of {args.claims}" if args.claims else \
        f"dataset {corpus.name} ({len(judge.texts)} documents)"
    print(f"trained judge for {what}: {path} ({time.perf_counter() - started:.1f} s; training took "
          f"{json.loads((path / 'training.json').read_text())['seconds'] / 60:.1f} min)")
    return 0


def align_judge_command(args: argparse.Namespace) -> int:
    """Align the trained judge with labelled claims, print its AUC before and after (out of fold, and held out
    on another claims set), and write the aligned judge as an option of the project's conf/judge/."""
    from datetime import date

    import yaml
    from omegaconf import OmegaConf

    from ragsweep.judging.training.alignment import (aligned_claims, load_alignment_claims, measure_alignment,
                                                     write_claims)
    from ragsweep.judging.calibration.labelled_claims import (HELDOUT_DOCUMENTS, default_claims, heldout_claims,
                                                              load_claims)
    from ragsweep.runner.standalone_judges import build_judge, compose_with_judge

    shipped = {default_claims().resolve(): (heldout_claims(), True), heldout_claims().resolve(): (default_claims(), False)}
    try:
        labels_path = args.labels.resolve()
        cites_corpora = labels_path == heldout_claims().resolve()
        claims = aligned_claims(load_alignment_claims(args.labels, args.documents or (
            _data_dir(args) / HELDOUT_DOCUMENTS if cites_corpora else None)))
        other, other_cites = shipped.get(labels_path, (default_claims(), False))
        heldout = None if str(args.heldout) == "none" else Path(args.heldout) if args.heldout else other
        held = None if heldout is None else (str(heldout), load_claims(
            heldout, _data_dir(args) / HELDOUT_DOCUMENTS if other_cites and not args.heldout else args.documents))
        judge, _ = build_judge(conf_dir(args.project), args.judge, args.overrides,
                               [*claims, *(held[1] if held else [])], args.project)
        if not callable(getattr(judge, "aligned", None)):
            raise ValueError(f"--judge {args.judge}: {type(judge).__name__} cannot be aligned; give the trained "
                             "judge (trained, trained_mpnet or an option of its class)")
        report = measure_alignment(judge, claims, args.folds, held)
    except (ValueError, OSError) as error:
        print(f"ragsweep: error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    ensure_project_config(args.project)
    written = write_claims(args.project / "judges" / f"{args.name}.jsonl", claims)
    composed = compose_with_judge(conf_dir(args.project), args.judge, args.overrides, args.project)
    config = {**OmegaConf.to_container(composed.judge, resolve=False), "threshold": report.threshold,
              "aligned_on": f"${{paths.root}}/judges/{written.name}", "align_epochs": judge.align_epochs,
              "auc": round(report.heldout_after if report.heldout_after is not None else report.after, 3)}
    header = (f"# judge={args.judge} aligned with {report.labels} labelled claims ({args.labels}) by `ragsweep "
              f"align-judge`, {date.today()}.\n# AUC on them {report.before:.3f} before, {report.after:.3f} out of "
              f"fold after" + (f"; held out on {Path(report.heldout).name}: {report.heldout_before:.3f} before, "
                               f"{report.heldout_after:.3f} after" if report.heldout else "") + ".\n")
    target = args.project / "conf" / "judge" / f"{args.name}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)  # a project from `ragsweep init` has no conf/judge/ yet
    partial = target.with_name(f".{target.name}.partial")
    partial.write_text(header + yaml.safe_dump(config, sort_keys=False))
    partial.replace(target)
    print(f"judge {args.judge} aligned with {report.labels} labelled claims:\n{report.table()}\n"
          f"wrote {target} (threshold {report.threshold} from the out-of-fold scores); use judge={args.name}")
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    """train-judge, calibrate and align-judge."""
    train = commands.add_parser("train-judge", help="fine-tune the `trained` judge on claims made from a corpus")
    corpus = train.add_mutually_exclusive_group()
    corpus.add_argument("--dataset", help="conf/dataset option whose documents to train on (default: config.yaml's)")
    corpus.add_argument("--claims", type=Path, help="claims file (.jsonl) whose passages to train on; labels unread")
    train.add_argument("--examples", type=int, help="synthetic pairs (default: conf/judge/trained.yaml)")
    train.add_argument("--epochs", type=int, help="passes over them (default: conf/judge/trained.yaml)")
    train.set_defaults(command=train_judge_command)
    calibrate = commands.add_parser("calibrate", help="measure a judge against labelled claims and find its threshold")
    calibrate.add_argument("--judge", required=True, help="an option of conf/judge/, e.g. lexical")
    calibrate.add_argument("--claims", type=Path, help="labelled claims JSONL to fit on (default: the shipped sotu "
                           "claims)")
    calibrate.add_argument("--heldout", help="labelled claims JSONL over other corpora to measure on (default: the "
                           "shipped chroma_general claims; none: in-sample figures only)")
    calibrate.add_argument("--documents", type=Path, help="folder of the documents a claims file's span passages "
                           "cite (<doc_id>.md or .txt)")
    calibrate.add_argument("--out", type=Path, default=Path("calibration"), help="folder for <judge>.json "
                           "(default: ./calibration)")
    calibrate.add_argument("--limit", type=int, help="judge only the first N claims")
    calibrate.add_argument("overrides", nargs="*", help="judge settings, e.g. judge.threshold=0.4")
    calibrate.set_defaults(command=calibrate_command)
    align = commands.add_parser("align-judge", help="fine-tune the trained judge on people's labels; AUC before/after")
    align.add_argument("--judge", default="trained", help="the trained judge's option to align (default: trained)")
    align.add_argument("--labels", type=Path, required=True, help="labelled claims: a claims file, or what `ragsweep "
                       "labels pull` writes")
    align.add_argument("--documents", type=Path, help="folder of the documents a claims file's span passages cite")
    align.add_argument("--heldout", help="claims file to measure on besides the labels (default: the shipped set "
                       "the labels are not; none: skip)")
    align.add_argument("--folds", type=int, default=5, help="folds of the out-of-fold AUC, grouped by passages")
    align.add_argument("--name", default="aligned", help="the judge option to write (conf/judge/<name>.yaml)")
    align.add_argument("overrides", nargs="*", help="trained judge settings, e.g. judge.align_epochs=2")
    align.set_defaults(command=align_judge_command)
