"""How close does a cached ragsweep grid get to the cost of embedding alone?

Runs, in one process, on chroma_general with the minilm embedder:
  1. a cold 36-config grid (chunkers recursive 200/0, fixed 800/400, fixed 250/125 x stores
     numpy, chroma, qdrant x k 1, 3, 5, 10) through the real runner, MLflow included, on an empty cache,
     each job's config composed as ragsweep's launcher composes a multirun's (not Hydra's `run_job`
     around it: `benchmarks/warm_sweep.py` times a real `sweep.py -m`);
  2. the same grid again (warm), as a second multirun;
  3. the lower bound: plain SentenceTransformer.encode calls of the distinct chunk texts and the
     questions (each text once), on the grid's own model, loaded outside the timing; the cold grid
     is charged the load instead.
The lower bound is measured in step with the cold grid. This shared machine's speed drifts by a
fifth within a minute, more than the difference being measured, so the bound encodes each text in
the same batch, seconds apart from the grid encoding it (first one side, then the other, in
turn), and the cold grid is timed without those encodes. Texts the grid encodes a second time get
no counterpart, so repeated work shows up against the grid; the bound's texts are checked against
an independent count of the distinct chunk texts and questions.
Prints a table, each phase's peak RSS (Linux's high-water mark, restarted between phases),
chroma's agreement with exact search, and as its last line
`cold_over_lower_bound=X warm_over_cold=Y warm_s_per_config=W warm_config_over_bound=V peak_rss_gb=Z`, Z being
the process's peak over all phases. V, a warm configuration's seconds over the lower bound's, compares runs as
the machine's speed drifts, only roughly: the bound is torch's encode on both cores, a warm configuration Python
on one.

With `--log docs/benchmarks/grid_runs.csv` (and `--note "what else ran"`), the run's figures are appended to that
run log, with the date and commit, which the grid benchmark page shows as its table.

`--smallest` (what `make test` runs): 6 configurations (recursive 200/0 x the 3 stores x k 1, 10) on
benchmarks/smallest.py's three short addresses, so that a change that breaks the script fails a test.

Usage: python benchmarks/grid.py [--data ../shared/data/chroma_general] [--workdir DIR] [--log CSV [--note TEXT]]
                                 [--smallest]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import ragsweep  # noqa: F401  (offline defaults)
from omegaconf import DictConfig

ROOT = Path(__file__).resolve().parents[1]
CHUNKERS = {
    "recursive 200/0": ["chunker=recursive", "chunker.size=200", "chunker.overlap=0"],
    "fixed 800/400": ["chunker=fixed", "chunker.size=800", "chunker.overlap=400"],
    "fixed 250/125": ["chunker=fixed", "chunker.size=250", "chunker.overlap=125"],
}
STORES = ["numpy", "chroma", "qdrant"]
KS = [1, 3, 5, 10]
SMALLEST = {"chunkers": ["recursive 200/0"], "stores": STORES, "ks": [1, 10]}  # --smallest's grid
BATCH_SIZE = 8  # the minilm embedder's, so both sides form the same batches


@contextmanager
def composed_as_launched(conf: Path = ROOT / "conf") -> Iterator[Callable[[list[str]], DictConfig]]:
    """Each job's config as ragsweep's launcher composes it in a multirun (once per choice of config groups,
    `ragsweep.runner.job_configs`), without its `hydra` node, as Hydra hands it to the job."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode
    from omegaconf import open_dict

    from ragsweep.runner.job_configs import GroupChoiceLoader

    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        master = loader.load_configuration("config", [], run_mode=RunMode.MULTIRUN)
        choices = GroupChoiceLoader(loader)

        def job_config(overrides: list[str]) -> DictConfig:
            config = choices.load_sweep_config(master, overrides)
            with open_dict(config):
                del config["hydra"]
            return config

        yield job_config


def grid(workdir: Path, data: Path, name: str, label: str, job_config: Callable[[list[str]], DictConfig],
         stores: list[str] = STORES, ks: list[int] = KS) -> float:
    """Seconds for one chunker's configurations (12: `stores` x `ks`), composed by `job_config` and run through the
    runner as a multirun's jobs are."""
    from ragsweep.runner.plan import plan_job
    from ragsweep.runner.run import RunContext, run

    started = time.perf_counter()
    for store in stores:
        for k in ks:
            overrides = [*CHUNKERS[name], f"store={store}", f"k={k}", "dataset=chroma_general", f"dataset.path={data}",
                         f"paths.root={workdir}", "embedder.progress=false", f"experiment=grid-{label}"]
            stem = f"{name.replace(' ', '_').replace('/', '-')}_{store}_k{k}"
            run(plan_job(job_config(overrides)), RunContext(workdir / "outputs" / label / stem))
    return time.perf_counter() - started


class LowerBound:
    """Plain encodes of what the grid's model is asked to encode, each distinct text once, timed apart."""

    def __init__(self) -> None:
        import sentence_transformers  # noqa: F401  (imported before the load is timed, as the grid finds it)

        from ragsweep.embedding.minilm import minilm_path
        from ragsweep.embedding.sentence_transformers import _load

        started = time.perf_counter()
        self.model = _load(minilm_path())  # the one the grid's embedder will use (one model a process)
        self.load_seconds = time.perf_counter() - started
        self.seconds = 0.0
        self.texts: set[str] = set()
        self._grid_encode = self.model.encode
        self._calls = 0

    def __enter__(self) -> LowerBound:
        self.model.encode = self._paired_encode  # this instance only
        return self

    def __exit__(self, *exc) -> None:
        del self.model.encode

    def _paired_encode(self, texts, *args, **kwargs):
        new = [text for text in dict.fromkeys(texts) if text not in self.texts]
        self.texts.update(new)
        self._calls += 1
        if self._calls % 2:  # take turns going first, so neither side always meets the warmer caches
            self._plain(new)
            return self._grid_encode(texts, *args, **kwargs)
        embeddings = self._grid_encode(texts, *args, **kwargs)
        self._plain(new)
        return embeddings

    def _plain(self, texts: list[str]) -> None:
        started = time.perf_counter()
        if texts:
            self._grid_encode(texts, batch_size=BATCH_SIZE, normalize_embeddings=True)
        self.seconds += time.perf_counter() - started


def distinct_texts(data: Path, names: list[str]) -> int:
    """How many distinct texts the grid has to embed: the chunk texts of the chunkers `names` and the questions."""
    from ragsweep.chunking.fixed import FixedTokenChunker
    from ragsweep.chunking.recursive import RecursiveChunker
    from ragsweep.data.chroma_general import ChromaGeneralDataset

    dataset = ChromaGeneralDataset(str(data)).load()
    made = {"recursive 200/0": RecursiveChunker(200, 0), "fixed 800/400": FixedTokenChunker(800, 400),
            "fixed 250/125": FixedTokenChunker(250, 125)}
    chunkers = [made[name] for name in names]
    texts = {chunk.text for chunker in chunkers for doc in dataset.documents.values() for chunk in chunker.split(doc)}
    return len(texts | {query.text for query in dataset.queries})


def chroma_agreement(workdir: Path, names: list[str], k: int = 10) -> float:
    """Mean share of exact (numpy) top-k chunks that chroma also returns, over the questions of the chunkers `names`."""
    shares = []
    for name in names:
        stem = name.replace(" ", "_").replace("/", "-")
        exact, approx = (workdir / "outputs" / "cold" / f"{stem}_{store}_k{k}" / "per_query.jsonl"
                         for store in ("numpy", "chroma"))
        for line_exact, line_approx in zip(exact.read_text().splitlines(), approx.read_text().splitlines()):
            spans = [{(r["doc_id"], r["start"], r["end"]) for r in json.loads(line)["retrieved"]} for line in (line_exact, line_approx)]
            shares.append(len(spans[0] & spans[1]) / max(len(spans[0]), 1))
    return sum(shares) / len(shares)


def _phase_peak_gb() -> float:
    """Peak RSS since the last call: the kernel's high-water mark, then restarted at the current RSS."""
    peak = _status_gb("VmHWM")
    Path("/proc/self/clear_refs").write_text("5")
    return peak


def _status_gb(field: str) -> float:
    """A memory figure of this process from /proc/self/status (Linux), in GB."""
    return int(re.search(rf"{field}:\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1)) / 1024**2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="default ../shared/data/chroma_general")
    parser.add_argument("--workdir", type=Path, default=None, help="kept afterwards when given; a temp dir otherwise")
    parser.add_argument("--log", type=Path, help="a run log (CSV) to append this run's figures to")
    parser.add_argument("--note", default="", help="the run's conditions, for the run log (what else ran)")
    parser.add_argument("--smallest", action="store_true", help="the smallest grid on tiny data (make test runs it)")
    args = parser.parse_args()
    if args.smallest and args.log:
        parser.error("--smallest measures nothing worth logging: leave out --log")
    names, stores, ks = ((SMALLEST["chunkers"], SMALLEST["stores"], SMALLEST["ks"]) if args.smallest
                         else (list(CHUNKERS), STORES, KS))
    import logging

    logging.getLogger().setLevel(logging.WARNING)
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    peaks = {"model load": 0.0, "cold grid and lower bound": 0.0, "warm grid": 0.0}

    def measured(phase: str, work):
        _phase_peak_gb()
        result = work()
        peaks[phase] = max(peaks[phase], _phase_peak_gb())
        return result

    with tempfile.TemporaryDirectory() as scratch:
        workdir = (args.workdir or Path(scratch)).resolve()
        if args.data is not None:
            data = args.data.resolve()
        elif args.smallest:
            from smallest import chroma_general

            data = chroma_general(Path(scratch) / "smallest") / "chroma_general"
        else:
            data = ROOT.parent / "shared" / "data" / "chroma_general"
        expected = distinct_texts(data, names)
        bound = measured("model load", LowerBound)
        cold, plain = {}, {}
        with bound, composed_as_launched() as job_config:  # one launcher for the grid, as in a multirun
            for name in names:
                plain_before = bound.seconds
                cold[name] = measured("cold grid and lower bound",
                                      lambda: grid(workdir, data, name, "cold", job_config, stores, ks))
                plain[name] = bound.seconds - plain_before
                cold[name] -= plain[name]
        with composed_as_launched() as job_config:
            warm = {name: measured("warm grid", lambda: grid(workdir, data, name, "warm", job_config, stores, ks))
                    for name in names}
        agreement = chroma_agreement(workdir, names, max(ks))
    cold_total = sum(cold.values()) + bound.load_seconds
    warm_total = sum(warm.values())
    configurations = len(names) * len(stores) * len(ks)
    print(f"\n{f'chunker ({len(stores) * len(ks)} configs each)':<26}{'lower bound':>12}{'cold':>8}{'cold / bound':>14}"
          f"{'warm':>8}")
    for name in names:
        print(f"{name:<26}{plain[name]:>12.1f}{cold[name]:>8.1f}{cold[name] / plain[name]:>14.3f}{warm[name]:>8.1f}")
    print(f"{'model load':<26}{'':>12}{bound.load_seconds:>8.1f}")
    print(f"{f'grid ({configurations} configs)':<26}{bound.seconds:>12.1f}{cold_total:>8.1f}"
          f"{cold_total / bound.seconds:>14.3f}{warm_total:>8.1f}")
    check = "as counted from the chunkers and questions" if len(bound.texts) == expected else f"NOT the {expected} counted"
    print(f"lower bound: {len(bound.texts)} distinct texts encoded once each, {check}")
    print("peak RSS of each phase (GB): " + ", ".join(f"{phase} {gb:.2f}" for phase, gb in peaks.items()))
    print(f"chroma top-{max(ks)} agreement with exact search: {agreement:.4f}")
    per_config = warm_total / configurations
    print("targets: cold <= 1.15 x lower bound, warm <= 0.05 x cold, warm <= 0.1 s a configuration, peak RSS <= 1.3 GB")
    print(f"cold_over_lower_bound={cold_total / bound.seconds:.3f} warm_over_cold={warm_total / cold_total:.3f} "
          f"warm_s_per_config={per_config:.3f} warm_config_over_bound={per_config / bound.seconds:.5f} "
          f"peak_rss_gb={max(peaks.values()):.2f}")
    if args.log:
        log_run(args.log, args.note, lower_bound_s=f"{bound.seconds:.1f}", cold_s=f"{cold_total:.1f}",
                warm_s=f"{warm_total:.1f}", cold_over_lower_bound=f"{cold_total / bound.seconds:.3f}",
                warm_over_cold=f"{warm_total / cold_total:.3f}", warm_s_per_config=f"{per_config:.3f}",
                warm_config_over_bound_x1000=f"{per_config / bound.seconds * 1000:.2f}",
                peak_rss_gb=f"{max(peaks.values()):.2f}")


def log_run(path: Path, note: str, **figures: str) -> None:
    """Append one run to the run log: its number (the last one's + 1), date, commit, figures and conditions."""
    import csv
    import datetime
    import subprocess

    with path.open(newline="", encoding="utf-8") as file:
        reader = csv.DictReader(file)
        fields, runs = reader.fieldnames, list(reader)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    run = {"run": str(int(runs[-1]["run"]) + 1 if runs else 1), "date": datetime.date.today().isoformat(),
           "commit": commit, **figures, "conditions": note}
    with path.open("a", newline="", encoding="utf-8") as file:
        csv.DictWriter(file, fields, lineterminator="\n").writerow(run)
    print(f"logged as run {run['run']} in {path}")


if __name__ == "__main__":
    main()
