"""`ragsweep best | report | gate | ui | server | sync`: from a finished sweep to a config you can trust and guard.

Run from the project folder (the one with sweep.py and conf/); the store defaults to the one
sweep.py writes, sqlite:///mlruns/mlflow.db.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import ragsweep  # noqa: F401  (offline defaults before MLflow loads)
from ragsweep.runner.entry import conf_dir, conf_dirs, ensure_project_config
from ragsweep.tracking.mlflow_tracker import MlflowTracker, sqlite_store_problem

log = logging.getLogger("ragsweep")
DEFAULT_MAX_DROP = "5%"  # relative: an absolute 0.02 on a metric near 0.03 let a 63% drop through
DEFAULT_SIGNIFICANCE = "0.05"
RANKING_HELP = ("metric to rank by (default: answer_f1 when the runs differ in their generator or prompt, ndcg when "
                "in their reranker, else token_iou)")
SIGNED_VALUE_OPTIONS = ("--max-drop", "--significance")  # the gate's own checks explain a negative value
_SIGNED = re.compile(r"^-[\d.]")
NO_STORE = ("no MLflow store at {path}: run a sweep first (ragsweep sweep -m +sweep=quick) "
            "or point --tracking-uri at it")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["sweep"] and argv[1:] not in (["-h"], ["--help"]):  # Hydra's command line, passed on whole
        from ragsweep.runner.entry import sweep

        sweep(argv[1:], conf_dir(Path.cwd()))
        return 0
    args = _parser().parse_args(_attach_signed_values(argv))
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from ragsweep.results.best import ResultsError

    try:
        return args.command(args)
    except ResultsError as error:
        print(f"ragsweep: error: {error}", file=sys.stderr)
        return 2


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


def best_command(args: argparse.Namespace) -> int:
    from ragsweep.results.best import ResultsError, best, compare, rerun
    from ragsweep.tracking.judges import judge_notes, summary_table
    from ragsweep.tracking.runs import markdown, tie_note

    if args.top < 1:
        raise ResultsError(f"--top {args.top}: give the number of rows to print, 1 or more")
    export = best(_tracker(args), args.metric, args.project, args.name, args.where, args.dataset)
    print(_dataset_line(export.dataset, export.datasets, args.dataset))
    print(f"Top {min(args.top, len(export.table))} of {len(export.table)} configurations by {export.metric}"
          f"{'' if args.metric else ' (the metric of the stage they vary; --metric picks another)'}:\n")
    print(markdown(summary_table(export.table.head(args.top), export.metric)))
    for note in [*judge_notes(export.table.head(args.top)), tie_note(export.table, export.metric)]:
        if note:
            print(note + "\n")
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


def report_command(args: argparse.Namespace) -> int:
    from ragsweep.results.report import write_report

    tracker = _tracker(args)
    output = args.output or args.project / "reports" / f"{args.experiment}.html"
    report = write_report(tracker, args.metric, output, args.dataset)
    print(_dataset_line(report.dataset, report.datasets, args.dataset))
    parent = tracker.attach_to_latest_sweep(report.path)
    print(f"wrote {report.path}, ranked by {report.metric}" + (f", and logged it to sweep run {parent}" if parent
                                                                 else ""))
    return 0


def diff_command(args: argparse.Namespace) -> int:
    from ragsweep.results.best import ResultsError
    from ragsweep.results.diff import diff_runs, write_html

    if args.top < 1:
        raise ResultsError(f"--top {args.top}: give the number of questions to print, 1 or more")
    found = diff_runs(_tracker(args), args.run_a, args.run_b, args.metric)
    print(found.text(args.top))
    if len(found.table) > args.top:
        print(f"... {len(found.table) - args.top} more questions: --top N, or the HTML page")
    output = args.output or args.project / "reports" / f"diff-{args.run_a[:8]}-{args.run_b[:8]}.html"
    print(f"wrote {write_html(found, output)}")
    return 0


def _dataset_line(dataset: str, datasets: list[str], asked: str | None) -> str:
    """Which dataset's runs a command compared, and how to pick another."""
    others = [name for name in datasets if name != dataset]
    why = "as --dataset asks" if asked else "the dataset of the experiment's newest run"
    return f"dataset {dataset} ({why})" + (f"; also runs on {', '.join(others)}: --dataset NAME" if others else "")


def gate_command(args: argparse.Namespace) -> int:
    from ragsweep.results.best import read_manifest, rerun
    from ragsweep.results.gate import (error_rate_note, gate_table, guarded_metrics, job_result, judge_line,
                                       other_config, parse_max_drop, parse_significance)
    from ragsweep.tracking.runs import markdown

    max_drop, significance = parse_max_drop(args.max_drop), parse_significance(args.significance)
    manifest = read_manifest(args.baseline)
    metrics = guarded_metrics(args.metrics, manifest)
    label = manifest.get("label") or manifest.get("config")
    baseline = _baseline_questions(args, manifest)
    if args.run:
        current = job_result(_store(args, manifest["experiment"]), args.run, "--run")
        if other_config(current, manifest, args.allow_other_config):
            print(f"note: --allow-other-config: gating {current['label']} against another configuration")
        what = f"run {args.run} ({current['label']})"
    else:
        result = rerun(args.project, args.baseline, "gate")
        current = {"metrics": result.metrics, "per_query": result.per_query, "judge": result.judge}
        what = "a rerun of the baseline config"
    judged = judge_line(manifest, current["judge"], metrics)  # refuses judged metrics of two different judges
    table = gate_table(manifest["metrics"], current["metrics"], baseline, current["per_query"],
                       metrics, max_drop, significance)
    shared, total = sum(question in current["per_query"] for question in baseline), len(baseline)
    print(f"Gate: {what} against {args.baseline} ({label}, run {manifest['run_id']}, dataset {manifest['dataset']})")
    print(f"fails when a metric drops by more than {max_drop}{' of its recorded value' if max_drop.relative else ''}"
          f" or a paired bootstrap on {'the' if shared == total else f'{shared} of the'} baseline's {total} questions"
          f" finds it worse at p < {significance:g}" + (f"\n{judged}" if judged else "") + "\n")
    print(markdown(table.drop(columns=["ok", "paired"])))
    for row in table[table.paired < shared].to_dict("records"):  # answer metrics: only answered questions
        print(f"{row['metric']}: the bootstrap paired the {row['paired']} of those {shared} questions that have it "
              "in both runs (a failed generation or a question without reference answers has none)")
    note = error_rate_note(manifest["metrics"], current["metrics"])
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
    tracker = _store(args, manifest["experiment"],
                     f"{missing} is missing and there is no MLflow store at {{path}} to read the baseline's run "
                     f"from; {redo}")
    return job_result(tracker, manifest["run_id"], "the baseline's run",
                      f"{missing} is missing, so gate reads the run from the store `ragsweep best` read: "
                      f"point --tracking-uri at it, or {redo}")["per_query"]


def init_command(args: argparse.Namespace) -> int:
    """A project folder: conf/config.yaml extending the packaged defaults, a dataset and a grid to copy from."""
    from ragsweep.runner.entry import PROJECT_CONFIG

    folder = args.folder.resolve()
    files = {folder / "conf" / "config.yaml": PROJECT_CONFIG,
             folder / "conf" / "dataset" / "my_data.yaml": MY_DATA,
             folder / "sweeps" / "my_grid.yaml": MY_GRID,
             folder / ".gitignore": "mlruns/\noutputs/\n.cache/\nreports/\n"}
    taken = [path for path in [*files, folder / "conf" / "sweep"] if path.exists() or path.is_symlink()]
    if taken:
        print(f"ragsweep: error: {taken[0]} exists; ragsweep init writes a new project: give an empty folder",
              file=sys.stderr)
        return 2
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (folder / "conf" / "sweep").symlink_to(Path("..") / "sweeps", target_is_directory=True)  # grids: +sweep=NAME
    print(f"wrote a ragsweep project in {folder}:\n"
          "  conf/config.yaml         extends the packaged defaults (ragsweep sweep --cfg job shows them)\n"
          "  conf/dataset/my_data.yaml  your documents and questions (format: README, Your own data)\n"
          "  sweeps/my_grid.yaml      a named grid (conf/sweep links to sweeps/)\n"
          f"next: cd {folder} && ragsweep sweep -m k=3,5   then: ragsweep best; ragsweep ui")
    return 0


MY_DATA = """\
# Your own data: documents/*.txt and queries.jsonl under data/my_data (format: README, Your own data).
# Use it: ragsweep sweep dataset=my_data   (or `- override dataset: my_data` in conf/config.yaml)
_target_: ragsweep.data.native.NativeDataset
path: ${paths.root}/data/my_data
"""

MY_GRID = """\
# @package _global_
# A named grid: ragsweep sweep -m +sweep=my_grid   (the packaged ones: quick, chunking, retrieval, full)
hydra:
  sweeper:
    params:
      k: 3,5
      chunker: recursive,fixed
"""


def ui_command(args: argparse.Namespace) -> int:
    """Serve MLflow's UI until it exits or this process gets Ctrl-C or SIGTERM, then stop all of it.

    `mlflow ui` is a tree of processes (uvicorn, a job runner, huey consumers). Started in its own
    session, a terminal's Ctrl-C reaches only this process, not each of them (each printed a
    traceback, and the job runner restarted its consumers); this process then stops the whole group.
    """
    uri = _existing_uri(args)
    if not _port_free(args.port):
        print(f"ragsweep: error: port {args.port} is in use; pass --port", file=sys.stderr)
        return 2
    print(f"MLflow UI for {uri}: http://127.0.0.1:{args.port}  (Ctrl-C stops it)", flush=True)
    return _serve([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri,
                   "--host", "127.0.0.1", "--port", str(args.port), "--workers", "1"])


def _port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on host:port now (MLflow's own check comes after 20 s of start-up)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a port in TIME_WAIT is free
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def server_command(args: argparse.Namespace) -> int:
    """A team's tracking server: PostgreSQL backend store, artifacts on a shared path (stopped like `ui`)."""
    from ragsweep.tracking.server import ServerError, server_command as command_line

    if not _port_free(args.port, args.host):
        print(f"ragsweep: error: port {args.port} is in use on {args.host}; pass --port", file=sys.stderr)
        return 2
    try:
        command, env = command_line(args.backend_store_uri, args.artifacts_destination, args.host, args.port,
                                    args.workers)
    except ServerError as error:
        print(f"ragsweep: error: {error}", file=sys.stderr)
        return 2
    print(f"MLflow tracking server on http://{args.host}:{args.port} (Ctrl-C stops it); sweeps log to it with "
          f"tracking.uri=http://{args.host}:{args.port}", flush=True)
    return _serve(command, env)


def sync_command(args: argparse.Namespace) -> int:
    """Log the runs a tracking server did not take (their records, `mlflow_run.json`) from job folders."""
    from ragsweep.tracking.mlflow_tracker import RECORD_FILE, MlflowTracker, RunRecord

    records = sorted(args.folder.rglob(RECORD_FILE))
    if not records:
        print(f"ragsweep: error: no {RECORD_FILE} under {args.folder}: give a job's output folder "
              "(outputs/multirun/<time>/<n>) or a sweep's", file=sys.stderr)
        return 2
    unlogged = 0
    for path in records:
        record = RunRecord.read(path)
        if not record.unsent:
            print(f"{path.parent}: already logged as run {record.run_id}")
            continue
        tracker = MlflowTracker(args.tracking_uri or record.uri, record.experiment,
                                str(args.project / "mlruns" / "artifacts"))
        try:
            run_id = tracker.sync(path)
        except Exception as error:  # noqa: BLE001  (the store still refuses: say so, keep the record, go on)
            print(f"{path.parent}: not logged, {tracker.uri} refused it ({error}); the record is kept", file=sys.stderr)
            unlogged += 1
            continue
        print(f"{path.parent}: logged as run {run_id} in {tracker.uri}")
    return 1 if unlogged else 0


def _serve(command: list[str], env: dict[str, str] | None = None) -> int:
    """Run a server until it exits or this process gets Ctrl-C or SIGTERM, then stop its whole process group."""
    signal.signal(signal.SIGTERM, _interrupt)  # `kill <pid>` stops the server too, not only this process
    server = None
    try:
        server = subprocess.Popen(command, start_new_session=True, env=env)
        return server.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if server is not None:
            _stop_group(server)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _stop_group(server: subprocess.Popen, grace_s: float = 5.0) -> None:
    """SIGTERM the server's process group (uvicorn shuts down quietly on it), SIGKILL what outlives `grace_s`."""
    import psutil

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the shutdown short
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        members = _group(server.pid)  # scanned each time: the job runner may have started new consumers
        if not members:
            break
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        psutil.wait_procs(members, timeout=grace_s)
    server.wait()


def _group(pgid: int) -> list:
    """The live (not zombie) processes of a process group."""
    import psutil

    members = []
    for process in psutil.process_iter(["status"]):
        try:
            if os.getpgid(process.pid) == pgid and process.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(process)
        except (ProcessLookupError, psutil.Error):
            continue
    return members


def calibrate_command(args: argparse.Namespace) -> int:
    """Judge two labelled claims sets, print held-out and in-sample agreement, write calibration/<judge>.json,
    log it to MLflow."""
    from ragsweep.judging.calibration import calibrate, cross_corpus, format_cross, format_table, write_calibration
    from ragsweep.runner.judges import build_judge, check_judge_option
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
    run_id = log_calibration(_uri(args), str(args.project / "mlruns" / "artifacts"), result, path, cross)
    use = None
    if callable(getattr(judge, "fit", None)):  # the ensemble: its fitted weights become a judge option
        from omegaconf import OmegaConf

        from ragsweep.judging.ensemble import write_fitted
        from ragsweep.runner.judges import compose_with_judge

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
    from ragsweep.judging.calibration import HELDOUT_DOCUMENTS, default_claims, heldout_claims, load_claims

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
    from hydra import compose, initialize_config_dir

    overrides = [f"paths.root={args.project.resolve()}", *(o for o in args.overrides if o.startswith("paths."))]
    with initialize_config_dir(config_dir=str(conf_dir(args.project).resolve()), version_base="1.3"):
        return Path(str(compose("config", overrides=overrides).paths.data))


def train_judge_command(args: argparse.Namespace) -> int:
    """Build the `trained` judge for a corpus (conf/judge/trained.yaml's settings) or find it in the cache."""
    import json
    import time

    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from hydra.utils import get_class, instantiate
    from omegaconf import OmegaConf

    from ragsweep.judging.synthetic import claims_passages
    from ragsweep.runner.build import JUDGE_SETTINGS

    overrides = [f"paths.root={args.project.resolve()}", "+judge@trained_judge=trained",
                 *([f"dataset={args.dataset}"] if args.dataset else []),
                 *(f"trained_judge.{key}={value}" for key, value in (("examples", args.examples), ("epochs", args.epochs))
                   if value is not None)]
    try:
        with initialize_config_dir(config_dir=str(conf_dir(args.project).resolve()), version_base="1.3"):
            cfg = compose("config", overrides=overrides)
        corpus = claims_passages(args.claims) if args.claims else instantiate(cfg.dataset).load()
        settings = {k: v for k, v in OmegaConf.to_container(cfg.trained_judge, resolve=True).items()
                    if k not in JUDGE_SETTINGS}  # the runner's keys, not the judge's
        judge = get_class(settings.pop("_target_"))(dataset=corpus, **settings)
        started = time.perf_counter()
        path = judge.build()
    except (HydraException, ValueError, OSError) as error:
        print(f"ragsweep: error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    what = f"{len(judge.texts)} passages of {args.claims}" if args.claims else \
        f"dataset {corpus.name} ({len(judge.texts)} documents)"
    print(f"trained judge for {what}: {path} ({time.perf_counter() - started:.1f} s; training took "
          f"{json.loads((path / 'training.json').read_text())['seconds'] / 60:.1f} min)")
    return 0


def generate_command(args: argparse.Namespace) -> int:
    """Write a span-grounded question set (a `native` dataset) from a folder of documents or a dataset's."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from hydra.utils import instantiate

    from ragsweep.data.base import DatasetError
    from ragsweep.data.native import read_documents
    from ragsweep.runner.build import ConfigError
    from ragsweep.runner.questions import QuestionSetWriter

    overrides = [f"paths.root={args.project.resolve()}",
                 *([f"+dataset={args.dataset}"] if args.dataset else []),
                 *([f"generator={args.generator}"] if args.generator else []),
                 *([f"questions_per_document={args.questions_per_document}"] if args.questions_per_document else []),
                 *args.overrides]
    try:
        conf, own = conf_dir(args.project, "generate"), args.project / "conf"
        if own.is_dir() and conf != own:  # the project's own datasets and components, beside the packaged ones
            overrides.insert(0, f"hydra.searchpath=[file://{own.resolve()}]")
        with initialize_config_dir(config_dir=str(conf.resolve()), version_base="1.3"):
            cfg = compose("generate", overrides=overrides)
        if args.dataset:
            documents = instantiate(cfg.dataset).load().documents
        else:
            documents = read_documents(args.documents, "--documents")
        report = QuestionSetWriter(cfg, documents).write(args.out)
    except (HydraException, ConfigError, DatasetError, ValueError, OSError) as error:
        print(f"ragsweep: error: {str(error).splitlines()[0]}", file=sys.stderr)
        return 2
    dropped = ", ".join(f"{reason} {count}" for reason, count in report["dropped"].items() if count) or "none"
    if not report["questions_kept"]:
        print(f"ragsweep: error: no question was kept (dropped: {dropped}); {args.out / 'generation_report.md'} "
              "says which check dropped them", file=sys.stderr)
        return 1
    print(f"kept {report['questions_kept']} of {report['questions_wanted']} questions wanted from "
          f"{report['passages_tried']} passages (yield {report['yield']:.0%}; dropped: {dropped}); "
          f"{report['seconds']:.0f} s, {report['seconds_per_draft']} s per draft")
    print(f"wrote {args.out / 'queries.jsonl'} and {args.out / 'generation_report.md'}; sweep it: "
          f"ragsweep sweep -m dataset=native dataset.path={args.out}")
    failed, limit = report["dropped"]["generation_failed"], float(cfg.generator.get("max_error_rate", 0.05))
    if report["passages_tried"] and failed / report["passages_tried"] > limit:
        print(f"ragsweep: error: {failed} of {report['passages_tried']} drafts failed (more than "
              f"generator.max_error_rate={limit}); see generation_report.md, then rerun: failed calls are not "
              "cached, finished drafts are", file=sys.stderr)
        return 1
    return 0


def _tracker(args: argparse.Namespace) -> MlflowTracker:
    """The experiment's tracker; an error naming the experiments that exist when it does not."""
    from ragsweep.results.best import ResultsError

    tracker = _store(args, args.experiment)
    if tracker.client().get_experiment_by_name(args.experiment) is None:
        names = [e.name for e in tracker.client().search_experiments()]
        raise ResultsError(f"no experiment {args.experiment!r} in {tracker.uri}; experiments: "
                           f"{', '.join(names) or 'none (run a sweep first)'}")
    return tracker


def _store(args: argparse.Namespace, experiment: str, refusal: str = NO_STORE) -> MlflowTracker:
    """A tracker on the store, which must exist (see _existing_uri)."""
    return MlflowTracker(_existing_uri(args, refusal), experiment, str(args.project / "mlruns" / "artifacts"))


def _existing_uri(args: argparse.Namespace, refusal: str = NO_STORE) -> str:
    """The store's URI; ResultsError (`refusal`, `{path}` the file) when it names a sqlite file that does not
    exist, since MLflow would create an empty store there, and its folders, before finding nothing in it."""
    from ragsweep.results.best import ResultsError

    uri = _uri(args)
    database = Path(uri.removeprefix("sqlite:///")).resolve() if uri.startswith("sqlite:///") else None
    if database is not None and not database.is_file():
        raise ResultsError(refusal.format(path=database))
    problem = sqlite_store_problem(database) if database is not None else None
    if problem:
        raise ResultsError(problem.replace("tracking.uri", "--tracking-uri"))
    return uri


def _uri(args: argparse.Namespace) -> str:
    return args.tracking_uri or f"sqlite:///{(args.project / 'mlruns' / 'mlflow.db').resolve()}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragsweep", description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=Path("."), help="folder with sweep.py and conf/ (default: .)")
    parser.add_argument("--tracking-uri", help="MLflow store (default: sqlite:///<project>/mlruns/mlflow.db)")
    commands = parser.add_subparsers(required=True, metavar="command")

    best = commands.add_parser("best", help="rank finished runs and export the best as conf/best/<name>.yaml")
    best.add_argument("--experiment", default="ragsweep")
    best.add_argument("--metric", help=RANKING_HELP)
    best.add_argument("--top", type=int, default=5, help="rows of the ranked table to print")
    best.add_argument("--where", help='filter, e.g. "params.k <= 10 and params.chunker = fixed" (numbers compare as '
                                      'numbers; text takes = and !=)')
    best.add_argument("--name", help="file name under conf/best/ (default: the experiment's name)")
    best.add_argument("--dataset", help="rank the runs on this dataset (default: the newest run's dataset)")
    best.add_argument("--verify", action="store_true", help="rerun the export; fail unless every metric matches")
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
                           f"value like 0.02 (default {DEFAULT_MAX_DROP.replace('%', '%%')})")
    gate.add_argument("--significance", default=DEFAULT_SIGNIFICANCE,
                      help="fail when a paired bootstrap on the baseline's questions finds the current run worse "
                           f"at p below this (default {DEFAULT_SIGNIFICANCE})")
    gate.add_argument("--metrics", help="comma-separated metrics to guard (default: the baseline's ranking metric)")
    gate.add_argument("--run", help="compare this MLflow run instead of rerunning the baseline")
    gate.add_argument("--allow-other-config", action="store_true",
                      help="let --run be another configuration than the baseline's (other config fingerprint)")
    gate.set_defaults(command=gate_command)

    train = commands.add_parser("train-judge", help="fine-tune the `trained` judge on claims made from a corpus")
    corpus = train.add_mutually_exclusive_group()
    corpus.add_argument("--dataset", help="conf/dataset option whose documents to train on (default: config.yaml's)")
    corpus.add_argument("--claims", type=Path, help="claims file (.jsonl) whose passages to train on; labels unread")
    train.add_argument("--examples", type=int, help="synthetic pairs (default: conf/judge/trained.yaml)")
    train.add_argument("--epochs", type=int, help="passes over them (default: conf/judge/trained.yaml)")
    train.set_defaults(command=train_judge_command)

    generate = commands.add_parser("generate", help="write a question set with exact reference spans from your documents")
    source = generate.add_mutually_exclusive_group(required=True)
    source.add_argument("--documents", type=Path, help="folder of UTF-8 .txt files (a document's id: its file name)")
    source.add_argument("--dataset", help="a conf/dataset option whose documents to use, e.g. sotu_qa")
    generate.add_argument("--out", type=Path, required=True, help="folder to write the native dataset and its report to")
    generate.add_argument("--questions-per-document", type=int, help="on average (default: conf/generate.yaml)")
    generate.add_argument("--generator", help="llama_cpp (default, local) or openai (with generator.base_url=...)")
    generate.add_argument("overrides", nargs="*", help="settings of conf/generate.yaml, e.g. judge=trained "
                                                       "filters.round_trip_k=0 generator.base_url=http://...")
    generate.set_defaults(command=generate_command)

    sweep = commands.add_parser("sweep", help="run one configuration, or a grid with -m (what python sweep.py does, "
                                "from any folder)", description="Hydra's command line, e.g. `ragsweep sweep -m "
                                "chunker=recursive,fixed k=5,10`; the configs are ./conf/config.yaml's (ragsweep init) "
                                "or the packaged ones; --config-dir DIR adds your own YAML; --hydra-help: Hydra's help")
    sweep.add_argument("overrides", nargs="*", help="Hydra overrides and flags (-m, --config-dir, --cfg job, ...)")

    init = commands.add_parser("init", help="write a project folder: conf/config.yaml extending the packaged "
                               "defaults, your dataset and grid, .gitignore")
    init.add_argument("folder", type=Path, nargs="?", default=Path("."), help="the folder (default: .)")
    init.set_defaults(command=init_command)

    ui = commands.add_parser("ui", help="start the MLflow UI on the project's store (127.0.0.1, one worker)")
    ui.add_argument("--port", type=int, default=5000)
    ui.set_defaults(command=ui_command)

    server = commands.add_parser("server", help="start a team's MLflow tracking server: PostgreSQL store, shared artifacts")
    server.add_argument("--backend-store-uri", required=True, help="postgresql://USER:PASSWORD@HOST:5432/DATABASE")
    server.add_argument("--artifacts-destination", required=True, help="folder on a shared mount (or another MLflow artifact URI) for artifacts")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface; default "
                                                            "127.0.0.1)")
    server.add_argument("--port", type=int, default=5000)
    server.add_argument("--workers", type=int, default=4, help="uvicorn workers (each ~150 MB)")
    server.set_defaults(command=server_command)

    sync = commands.add_parser("sync", help="log job results a tracking server did not take (kept in their folders)")
    sync.add_argument("folder", type=Path, help="a job's output folder, or a sweep's (every job under it)")
    sync.set_defaults(command=sync_command)

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
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
