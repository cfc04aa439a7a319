"""Say when chunking changed nothing: every document a single chunk under every chunker a run or a sweep ran.

A job sees only its own chunker: the fixed-size chunker may keep each document whole while the sentence chunker
splits them, so a warning from one job that "every chunker gives the same chunks" would be false. Each job records
its chunking here and in its output folder (`RECORD`); the warning is given once, when the run or the sweep ends (a
Hydra callback, or the Python API), and only for a dataset every chunker that ran kept whole, naming them. A sweep
whose jobs ran in other processes (hydra/launcher=joblib) is judged on the records in its jobs' folders; when a job
of it started a run but left no record there (it failed first, or could not write it), nothing is said.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from ragsweep.disk import cannot_write, write_refused
from ragsweep.runner.plan import JobPlan
from ragsweep.tracking.record import RECORD_FILE
from ragsweep.types import Dataset

log = logging.getLogger(__name__)

RECORD = "chunking.json"  # in a job's output folder: its dataset, chunker and whether it kept every document whole


@dataclass
class _Chunkings:
    """One dataset's chunkings this run or sweep ran: whether each chunker kept every document whole."""

    name: str
    longest: int
    whole: dict[str, bool] = field(default_factory=dict)


_SEEN: dict[str, _Chunkings] = {}  # dataset fingerprint -> its chunkings since the last warning


def record_chunking(plan: JobPlan, dataset: Dataset, chunks: int | None, folder: Path | None = None) -> None:
    """Note that the job's chunker made `chunks` chunks of `dataset` (whole documents when as many as documents;
    None: no chunker ran, a whole retriever); with `folder`, also in its `RECORD` there, for a sweep whose end is
    seen by another process. A record that cannot be written is said and the job goes on."""
    record: dict[str, Any] = {"chunker": None}
    if chunks is not None:
        record = {"dataset": dataset.name, "fingerprint": dataset.fingerprint, "chunker": chunker_named(plan),
                  "longest": max(document.length for document in dataset.documents.values()),
                  "whole": chunks == len(dataset.documents)}
        _note(record)
    if folder is None:
        return
    path = Path(folder) / RECORD
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record), encoding="utf-8")
    except OSError as error:
        refused = write_refused(error)
        log.warning("this job's chunking is not recorded in its folder, so a sweep whose jobs run in other processes "
                    "(hydra/launcher=joblib) does not say at its end whether every document is a single chunk: %s",
                    cannot_write(refused) if refused is not None else f"cannot write {path}: {error}")


def _note(record: dict[str, Any]) -> None:
    """Add one job's chunking `record` to what this run or sweep ran (the same job seen twice counts once)."""
    seen = _SEEN.setdefault(record["fingerprint"], _Chunkings(record["dataset"], record["longest"]))
    seen.whole[record["chunker"]] = seen.whole.get(record["chunker"], True) and record["whole"]


def chunker_named(plan: JobPlan) -> str:
    """The job's chunker as a user chose it: `chunker=fixed (chunker.size=800)`."""
    option = plan.params.get("chunker") or str(plan.targets.get("chunker", "")).rsplit(".", 1)[-1]
    size = plan.params.get("chunker.size")
    return f"chunker={option}" + (f" (chunker.size={size})" if size is not None else "")


def say_whole_documents(records: Iterable[dict[str, Any]] | None = ()) -> None:
    """Warn once for each dataset whose every document each chunker that ran since the last call kept as a single
    chunk, counting the jobs' `records` read from their folders (None: some job's is missing, so say nothing);
    then forget what ran, so the next run or sweep is judged on its own."""
    if records is None:
        _SEEN.clear()
        return
    for record in records:
        if record.get("chunker") is not None:
            _note(record)
    for seen in _SEEN.values():
        if seen.whole and all(seen.whole.values()):
            chunkers = ", ".join(seen.whole)
            log.warning("every document of %s is a single chunk under %s (the longest has %d characters), so the "
                        "chunks are the documents whatever the chunker and a comparison of chunkers shows nothing; "
                        "lower chunker.size", seen.name, chunkers if len(seen.whole) == 1 else
                        f"each of the {len(seen.whole)} chunkers that ran: {chunkers}", seen.longest)
    _SEEN.clear()


def job_records(sweep_dir: Path, since: float) -> list[dict[str, Any]] | None:
    """The chunking records the jobs of the sweep in `sweep_dir` wrote since `since` (older ones are an earlier
    sweep's in the same folder), wherever the jobs ran; None when one cannot be read, or when a job that started a
    run there since (its `RECORD_FILE`) left none, as its chunker may have split what the others kept whole."""
    def fresh(path: Path) -> bool:
        try:
            return path.stat().st_mtime >= since
        except OSError:
            return False

    written = {path.parent: path for path in sweep_dir.rglob(RECORD) if fresh(path)}
    if any(run.parent not in written for run in sweep_dir.rglob(RECORD_FILE) if fresh(run)):
        return None
    numbered = sorted(written, key=lambda folder: [part.zfill(20) for part in folder.relative_to(sweep_dir).parts])
    try:
        return [json.loads(written[folder].read_text(encoding="utf-8")) for folder in numbered]  # the jobs' order
    except (OSError, ValueError):
        return None


class WholeDocuments(Callback):
    """Hydra's end of a run or of a sweep: `say_whole_documents`, in a sweep with its jobs' records."""

    def __init__(self) -> None:
        self.started = 0.0

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.started = time.time() - 1.0  # file times lag the clock a little

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        say_whole_documents()

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        say_whole_documents(job_records(Path(str(config.hydra.sweep.dir)), self.started))
