"""`ragsweep init | sweep | estimate | docs`: a project folder of your own, and Hydra's command line from any folder: run, or
priced before it runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ragsweep.numbers import finite_number

if TYPE_CHECKING:
    from ragsweep.runner.estimating.estimates import SweepEstimate


def init_command(args: argparse.Namespace) -> int:
    """A project folder: conf/config.yaml extending the packaged defaults, a dataset and a grid to copy from."""
    from ragsweep.runner.entry import PROJECT_CONFIG

    folder = args.folder.resolve()
    if folder.exists() and not folder.is_dir():
        print(f"ragsweep: error: {args.folder} is a file; ragsweep init writes a project folder: give a new or empty "
              "folder's path", file=sys.stderr)
        return 2
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
          "  conf/dataset/my_data.yaml  your documents as they are (PDF, HTML, Word, Markdown) in data/my_data/, "
          "questions quoting them (format: ragsweep docs dataset)\n"
          "  sweeps/my_grid.yaml      a named grid (conf/sweep links to sweeps/)\n"
          f"next: cd {folder} && ragsweep sweep -m k=3,5   then: ragsweep best; ragsweep ui")
    return 0


MY_DATA = """\
# Your documents as they are under data/my_data/ (PDF, HTML, Word, Markdown, text, at any depth) and
# data/my_data/questions.jsonl quoting their evidence:
#   {"id": "q1", "question": "...", "evidence": [{"doc": "reports/2023.pdf", "quote": "...", "page": 4}]}
# (format: `ragsweep docs dataset`). Use it: ragsweep sweep -m dataset=my_data parser=pdfium,pypdf
# Text already clean, with character offsets: _target_: ragsweep.data.native.NativeDataset (documents/*.txt).
_target_: ragsweep.data.files.FilesDataset
path: ${paths.root}/data/my_data
parser: ${parser}   # how each file is read: the parser group (parser=pdfium, pypdf, pdfminer)
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


def add_commands(commands: argparse._SubParsersAction) -> None:
    """sweep and estimate (their arguments go to Hydra whole: see `main`), init, constraints and docs."""
    sweep = commands.add_parser("sweep", help="run one configuration, or a grid with -m (what python sweep.py does, "
                                "from any folder)", description="Hydra's command line, e.g. `ragsweep sweep -m "
                                "chunker=recursive,fixed k=5,10`; the configs are ./conf/config.yaml's (ragsweep init) "
                                "or the packaged ones; --config-dir DIR adds your own YAML; --hydra-help: Hydra's help")
    sweep.add_argument("overrides", nargs="*", help="Hydra overrides and flags (-m, --config-dir, --cfg job, ...)")
    estimate = commands.add_parser("estimate", help="a sweep's model calls, tokens and cost before it runs (the "
                                   "arguments of ragsweep sweep)", description="Each job of `ragsweep sweep ARGS`: its "
                                   "rewrites', answers', judges' calls, how many the stage cache holds, "
                                   "their tokens, the cost_total its run will log and what its new calls cost (prices "
                                   "in conf); retrieval runs (and is cached for the sweep), no model is asked "
                                   "unless --sample N")
    estimate.add_argument("--sample", type=int, default=0, metavar="N",
                          help="first make each job's calls for N questions spread over the dataset (cached: the sweep "
                          "reuses them) and scale its predicted calls by how these compare (docs: Metrics, Costs)")
    estimate.add_argument("--within", type=float, metavar="SHARE",
                          help="ask more questions (from --sample, default 16) until the sweep's tokens and cost are "
                          "known within ±SHARE at 95%%, e.g. 0.05, or every question is asked")
    estimate.add_argument("overrides", nargs="*", help="the sweep's overrides and flags, e.g. -m query=none,hyde k=3,5")
    init = commands.add_parser("init", help="write a project folder: conf/config.yaml extending the packaged "
                               "defaults, your dataset and grid, .gitignore")
    init.add_argument("folder", type=Path, nargs="?", default=Path("."), help="the folder (default: .)")
    init.set_defaults(command=init_command)
    constraints = commands.add_parser("constraints", help="print every package version ragsweep was tested with, "
                                      "for pip install -c (docs: Install)")
    constraints.set_defaults(command=constraints_command)
    docs = commands.add_parser("docs", help="print a configuration page (shipped with ragsweep, as on the docs site): "
                               "a config group's settings and options, e.g. ragsweep docs dataset")
    docs.add_argument("page", nargs="?", help="the page: a config group (dataset, chunker, ...) or index; none "
                      "lists them")
    docs.set_defaults(command=docs_command)


def estimate(argv: list[str], conf: Path) -> int:
    """`ragsweep estimate ARGS`: every point of the sweep checked as the sweep checks it, then estimated."""
    from ragsweep.runner.estimating.prediction import SCALE_FROM
    from ragsweep.runner.estimating.sweep import SweepEstimator
    from ragsweep.runner.preflight import check_command_line

    (sample, within), argv = _taken(argv, "--sample", "--within")
    problems = []  # the options', before any work
    if sample is not None and not sample.isdigit():
        problems.append(f"--sample {sample}: give a whole number of questions >= 0, e.g. --sample 8")
    share = finite_number(within)
    if within is not None and (share is None or not 0 < share < 1):
        problems.append(f"--within {within}: give the share of each figure the estimate may miss by, between 0 and 1, "
                        "e.g. --within 0.05 (±5%)")
    if not problems:
        estimator = SweepEstimator(int(sample or 0) or (2 * SCALE_FROM if within is not None else 0))
        problems = check_command_line(argv, conf, visit=estimator.visit)
    for problem in problems:
        print(f"ragsweep: error: {problem}", file=sys.stderr)
    if problems:
        return 2
    estimate = estimator.narrowed(float(within)) if within is not None else estimator.estimate()
    print(estimate_table(estimate) if estimate.jobs else "ragsweep estimate: these arguments run no job (Hydra's "
          "--cfg, --info, --help answer without one); give a sweep's overrides, e.g. -m k=3,5")
    return 0


def _taken(argv: list[str], *options: str) -> tuple[list[str | None], list[str]]:
    """Each option's value (`--name V` or `--name=V`; None where not given) taken out of a sweep's arguments."""
    values: list[str | None] = []
    for option in options:
        value = None
        for position, argument in enumerate(argv):
            if argument == option or argument.startswith(f"{option}="):
                value = argument.partition("=")[2] if "=" in argument else "".join(argv[position + 1: position + 2])
                argv = argv[:position] + argv[position + (1 if "=" in argument else 2):]
                break
        values.append(value)
    return values, argv


def estimate_table(estimate: SweepEstimate) -> str:
    """One line per job (its rewrites', answers', judge's and relevance judge's calls, and where its embedder or
    reranker is an endpoint the texts it embeds and the questions it reranks, how many are cached, their tokens, its
    cost; each figure's 95% interval beside it when a job is scaled by a sample), then the sweep's new
    spending; ~ marks a count predicted with no call of its model cached (cl100k tokens and max_tokens: a bound)."""
    from ragsweep.runner.estimating.intervals import INTERVALS

    intervals = any(job.intervals for job in estimate.jobs)
    at_endpoints = [stage for stage in ("embedding", "rerank") if any(stage in job.stages for job in estimate.jobs)]
    names = ("query", "generation", "judge", "relevance", *at_endpoints)
    rows = [("job", "questions", "rewrites", "answers", "judge", "relevance",
             *({"embedding": "embedded texts", "rerank": "reranks"}[stage] for stage in at_endpoints),
             *(column for name in INTERVALS for column in (name, f"{name}_95%")[:1 + intervals]), "new_cost")]
    for job in estimate.jobs:
        stages = [job.stages.get(stage) for stage in names]
        calls = [f"{s.calls} ({s.cached} cached)" if s else "-" for s in stages]
        rough = "~" if any(s and s.rough for s in stages) else ""
        figures = []
        for name in INTERVALS:
            figures.append(f"{rough}{job.total(name):{_STYLES[name][0]}}")
            if intervals:
                figures.append(_interval(job.intervals.get(name), _STYLES[name][1]))
        rows.append((job.label, str(job.questions), *calls, *figures, f"{rough}{job.new_cost:.4g}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) if i == 0 else cell.rjust(width) for i, (cell, width)
                       in enumerate(zip(row, widths))) for row in rows]
    lines.append(f"new model calls: {estimate.new_calls} (a prompt asked by several jobs counts once), costing about "
                 f"{estimate.new_cost:.4g}" + (f", 95% {_interval(estimate.interval)}" if estimate.interval else ""))
    if (margin := estimate.margin()) is not None:
        lines.append("the sweep: " + ", ".join(f"{name} {estimate.total(name):{_STYLES[name][0]}} "
                                              f"{_interval(estimate.intervals[name], _STYLES[name][1])}"
                                              for name in INTERVALS) +
                     f" (95%: within ±{margin:.1%})" +
                     (f", {estimate.sample} questions of each job asked first" if estimate.sample else ""))
    if intervals:
        lines.append("95%: the interval of a figure scaled by the job's own held calls (a sample's), from bootstrap "
                     "draws of their questions; - where no call of the job's own scales it")
    if any(s.rough for job in estimate.jobs for s in job.stages.values()):
        lines.append("~: no call of that model is cached yet: prompt tokens counted with cl100k, completions at "
                     "max_tokens (a bound), seconds not known" +
                     ("; reranks: each question's candidates at the chunks' mean tokens" if "rerank" in at_endpoints
                      else ""))
    return "\n".join(lines)


_STYLES = {"prompt_tokens": (",", ".0f"), "completion_tokens": (",", ".0f"), "cost_total": (".4g", ".4g")}  # value, 95%


def _interval(bounds: tuple[float, float] | None, style: str = ".4g") -> str:
    return "-" if bounds is None else f"[{bounds[0]:{style}},{bounds[1]:{style}}]"


def docs_command(args: argparse.Namespace) -> int:
    """A configuration page, as Markdown: where ragsweep points a user, whichever way it was installed."""
    from ragsweep.packaged import page, page_names

    if args.page is None:
        print("\n".join(page_names()))
        return 0
    try:
        print(page(args.page), end="")
    except KeyError:
        print(f"ragsweep: error: no page {args.page!r}; the pages: {', '.join(page_names())}", file=sys.stderr)
        return 2
    return 0


def constraints_command(args: argparse.Namespace) -> int:
    """The constraints file shipped inside the package: `ragsweep constraints > c.txt; pip install -c c.txt ...`."""
    from importlib.resources import files

    print(files("ragsweep").joinpath("constraints.txt").read_text(encoding="utf-8"), end="")
    return 0
