"""What does each PDF parser keep of a filing's evidence, what does it cost, and what does it change downstream?

On a folder of PDFs with FinanceBench-form questions (default ../shared/data/financebench_dev: 12 SEC filings,
21 questions, 27 quoted pieces of evidence), in four parts:

1. Speed and memory, each parser in a process of its own on one core: pages a second through ragsweep's
   parse (an empty stage cache: the parse, its hash and its cache entry) and through the library alone, their
   ratio (alone / ragsweep; the target: ragsweep's within 1.5x of its library), and the process's peak RSS;
   then ragsweep's parse on every core, with its helper processes (`spread`: that rate over the one-core one).
2. Evidence located: the share of quotes each parser's text holds (`evidence_found / evidence`), and how many
   of them verbatim once folded.
3. A real sweep, `python sweep.py -m dataset=files parser=... chunker=recursive,sentence k=5,10` under
   retriever=bm25 and then retriever=dense embedder=static (model2vec; MiniLM would take half an hour to embed
   the six chunkings), its token_recall and recall per configuration, and `ragsweep effects --metric
   token_recall` for the parser's effect with its interval (bm25's sweep).
4. With `--grow N`: the folder grown to N PDFs (the filings copied under new names, each copy's bytes made
   distinct by a trailing PDF comment, so the cache, which keys a file by its bytes, parses each anew), parsed
   by pdfium through ragsweep on one core (milliseconds a page), then `python sweep.py` on it twice (k=5, then
   k=10): the files each parses are the new entries in its stage cache's `parsed/` folder, 0 the second time.

`--smallest` (what `make test` runs): benchmarks/smallest.py's three addresses as PDFs of a few pages with 21
FinanceBench-form questions, parsers pdfium and pypdf, and the sweeps cut to chunker=recursive k=5 (with --grow,
k=5 and 10 still).

Usage: python benchmarks/parsing.py [--data ../shared/data/financebench_dev] [--parsers pdfium pypdf pdfminer]
                                    [--grow 1000] [--skip-speed] [--skip-sweep] [--workdir DIR] [--keep] [--smallest]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

ONE_PARSER = r"""
import json, resource, sys, time
from pathlib import Path
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from ragsweep.cache import StageCache
from ragsweep.parsing.files import parse_files

option, folder, cache, how = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
with initialize_config_dir(config_dir=sys.argv[5], version_base="1.3"):
    parser = instantiate(compose("config", overrides=[f"parser={option}"]).parser)
paths = sorted(folder.rglob("*.pdf"))
started = time.perf_counter()
if how == "alone":
    pages = sum(len(parser.pdf.parse(path).pages) for path in paths)
else:
    parsed = parse_files(parser, paths, StageCache(cache), helpers=how == "helpers")
    pages = sum(len(each.pages) for each in parsed)
seconds = time.perf_counter() - started
print(json.dumps({"pages": pages, "seconds": seconds,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(command: list[str], cwd: Path, **extra: str) -> str:
    environment = {**os.environ, "OMP_NUM_THREADS": "1", **extra}
    done = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{done.stderr[-3000:]}")
    return done.stdout


def speed_of(option: str, data: Path, workdir: Path, how: str = "ragsweep") -> dict:
    """Pages, seconds and peak RSS of parsing the folder's PDFs in a process of its own, on core 0: through
    ragsweep's parse on an empty cache, or (`how="alone"`) the library alone; or (`how="helpers"`) through
    ragsweep's parse with its helper processes, on every core."""
    cache = workdir / f"cache-speed-{option}-{time.time_ns()}"
    pinned = [] if how == "helpers" else ["taskset", "-c", "0"]
    out = run([*pinned, PYTHON, "-c", ONE_PARSER, option, str(data), str(cache), how, str(ROOT / "conf")], ROOT)
    return json.loads(out.strip().splitlines()[-1])


def located(option: str, data: Path, workdir: Path) -> dict:
    from hydra import compose, initialize_config_dir

    from ragsweep.cache import StageCache
    from ragsweep.data.files import FilesDataset

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        from hydra.utils import instantiate

        parser = instantiate(compose("config", overrides=[f"parser={option}"]).parser)
    return FilesDataset(str(data), parser, cache=StageCache(workdir / "cache")).load().loading


SWEPT = ["chunker=recursive,sentence", "k=5,10"]  # part 3's grid beside the parsers; --smallest's is SMALLEST
SMALLEST = ["chunker=recursive", "k=5"]


def sweep(project: Path, data: Path, parsers: list[str], retriever: list[str], experiment: str,
          grid: list[str] = SWEPT) -> list[dict]:
    overrides = ["-m", "dataset=files", f"dataset.path={data}", f"parser={','.join(parsers)}",
                 *grid, *retriever, f"experiment={experiment}",
                 f"cache.dir={project / 'cache'}", "tracking.trace_queries=0"]
    run([PYTHON, str(ROOT / "sweep.py"), *overrides], project)
    return runs(project, experiment)


def runs(project: Path, experiment: str) -> list[dict]:
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{project / 'mlruns' / 'mlflow.db'}")
    table = mlflow.search_runs(experiment_names=[experiment])
    return [row for row in table.to_dict("records") if isinstance(row.get("tags.mlflow.parentRunId"), str)]


def grow(data: Path, size: int, workdir: Path) -> Path:
    """`size` PDFs: the folder's filings copied round-robin under new names, each made distinct by a comment after
    its end (readers ignore it), and the questions as they are (they cite the originals, which keep their names)."""
    folder = workdir / f"grown-{size}"
    (folder / "pdfs").mkdir(parents=True, exist_ok=True)
    originals = sorted((data / "pdfs").glob("*.pdf"))
    for original in originals:
        shutil.copy(original, folder / "pdfs" / original.name)
    for number in range(size - len(originals)):
        source = originals[number % len(originals)]
        (folder / "pdfs" / f"{source.stem}-copy{number}.pdf").write_bytes(source.read_bytes()
                                                                        + f"\n% copy {number}\n".encode())
    shutil.copy(data / "questions.jsonl", folder / "questions.jsonl")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="default ../shared/data/financebench_dev")
    parser.add_argument("--parsers", nargs="+", default=None, help="default pdfium pypdf pdfminer")
    parser.add_argument("--grow", type=int, default=0)
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-sweep", action="store_true")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--smallest", action="store_true", help="tiny PDFs, 2 parsers (make test runs it)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ragsweep-parsing-"))
    workdir.mkdir(parents=True, exist_ok=True)
    grid = SMALLEST if args.smallest else SWEPT
    if args.smallest:
        from smallest import filings

        args.data = args.data or filings(workdir / "smallest")
        args.parsers = args.parsers or ["pdfium", "pypdf"]
    data = (args.data or ROOT.parent / "shared" / "data" / "financebench_dev").resolve()
    args.parsers = args.parsers or ["pdfium", "pypdf", "pdfminer"]
    try:
        print("parser    pages  ragsweep_pages_s  alone_pages_s  ratio  peak_rss_mb  helpers_pages_s  spread  "
              "evidence_found  verbatim")
        for option in [] if args.skip_speed else args.parsers:
            ours, alone = speed_of(option, data, workdir), speed_of(option, data, workdir, "alone")
            spread = speed_of(option, data, workdir, "helpers")
            loading = located(option, data, workdir)
            rate, alone_rate = ours["pages"] / ours["seconds"], alone["pages"] / alone["seconds"]
            spread_rate = spread["pages"] / spread["seconds"]
            print(f"{option:9} {ours['pages']:5d}  {rate:16.1f}  {alone_rate:13.1f}  {alone_rate / rate:5.2f}  "
                  f"{ours['peak_rss_mb']:11.0f}  {spread_rate:15.1f}  {spread_rate / rate:6.2f}  "
                  f"{loading['evidence_found']:>6d} of {loading['evidence']:<5d}  {loading['evidence_verbatim']:8d}",
                  flush=True)
        if not args.skip_sweep:
            project = workdir / "project"
            project.mkdir(exist_ok=True)
            for name, retriever in (("bm25", ["retriever=bm25"]), ("static", ["retriever=dense", "embedder=static"])):
                found = sweep(project, data, args.parsers, retriever, f"parsing-{name}", grid)
                print(f"\n{name}: configuration, token_recall, recall, evidence_located")
                for row in sorted(found, key=lambda row: row["tags.ragsweep.config_label"]):
                    print(f"  {row['tags.ragsweep.config_label']:60} {row['metrics.token_recall']:.4f}  "
                          f"{row['metrics.recall']:.4f}  {row['metrics.evidence_located']:.4f}")
            print(run([str(Path(PYTHON).with_name("ragsweep")), "effects", "--metric", "token_recall",
                       "--experiment", "parsing-bm25"], project))
        if args.grow:
            grown = grow(data, args.grow, workdir)
            parsed = speed_of(args.parsers[0] if args.parsers[0] == "pdfium" else "pdfium", grown, workdir)
            print(f"\ngrown to {args.grow} PDFs ({parsed['pages']} pages), parsed by pdfium through ragsweep on one "
                  f"core: {1000 * parsed['seconds'] / parsed['pages']:.2f} ms a page, peak RSS "
                  f"{parsed['peak_rss_mb']:.0f} MB")
            project = workdir / "grown-project"
            project.mkdir(exist_ok=True)
            entries = project / "cache" / "parsed"
            for k in (5, 10):
                before = sum(1 for _ in entries.rglob("*.npz")) if entries.is_dir() else 0
                started = time.perf_counter()
                run([PYTHON, str(ROOT / "sweep.py"), "dataset=files", f"dataset.path={grown}", "retriever=bm25",
                     f"k={k}", f"cache.dir={project / 'cache'}", "experiment=parsing-grown",
                     "tracking.trace_queries=0"], project)
                made = sum(1 for _ in entries.rglob("*.npz")) - before
                print(f"sweep.py on the grown folder, k={k}: {time.perf_counter() - started:.0f} s, files parsed "
                      f"(new cache entries): {made}")
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        print(f"peak RSS of this script: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; of the "
              f"largest process it ran: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
