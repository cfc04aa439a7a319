"""Say when chunking changed nothing: every document a single chunk under every chunker a run or a sweep ran.

A job sees only its own chunker: the fixed-size chunker may keep each document whole while the sentence chunker
splits them, so a warning from one job that "every chunker gives the same chunks" would be false. Each job records
its chunking here; the warning is given once, when the run or the sweep ends (a Hydra callback, or the Python API),
and only for a dataset every chunker that ran kept whole, naming them. Jobs of a sweep run in other processes
(hydra/launcher=joblib) record nothing here, so such a sweep is never warned about rather than warned falsely.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from ragsweep.runner.plan import JobPlan
from ragsweep.types import Dataset

log = logging.getLogger(__name__)


@dataclass
class _Chunkings:
    """One dataset's chunkings this process ran: whether each chunker kept every document whole."""

    name: str
    longest: int
    whole: dict[str, bool] = field(default_factory=dict)


_SEEN: dict[str, _Chunkings] = {}  # dataset fingerprint -> its chunkings since the last warning


def record_chunking(plan: JobPlan, dataset: Dataset, chunks: int) -> None:
    """Note that the job's chunker made `chunks` chunks of `dataset` (whole documents when as many as documents)."""
    seen = _SEEN.get(dataset.fingerprint)
    if seen is None:
        longest = max(document.length for document in dataset.documents.values())
        seen = _SEEN[dataset.fingerprint] = _Chunkings(dataset.name, longest)
    chunker = chunker_named(plan)
    seen.whole[chunker] = seen.whole.get(chunker, True) and chunks == len(dataset.documents)


def chunker_named(plan: JobPlan) -> str:
    """The job's chunker as a user chose it: `chunker=fixed (chunker.size=800)`."""
    option = plan.params.get("chunker") or str(plan.targets.get("chunker", "")).rsplit(".", 1)[-1]
    size = plan.params.get("chunker.size")
    return f"chunker={option}" + (f" (chunker.size={size})" if size is not None else "")


def say_whole_documents() -> None:
    """Warn once for each dataset whose every document each chunker that ran since the last call kept as a single
    chunk; then forget what ran, so the next run or sweep is judged on its own."""
    for seen in _SEEN.values():
        if seen.whole and all(seen.whole.values()):
            chunkers = ", ".join(seen.whole)
            log.warning("every document of %s is a single chunk under %s (the longest has %d characters), so the "
                        "chunks are the documents whatever the chunker and a comparison of chunkers shows nothing; "
                        "lower chunker.size", seen.name, chunkers if len(seen.whole) == 1 else
                        f"each of the {len(seen.whole)} chunkers that ran: {chunkers}", seen.longest)
    _SEEN.clear()


class WholeDocuments(Callback):
    """Hydra's end of a run or of a sweep: `say_whole_documents`."""

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        say_whole_documents()

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        say_whole_documents()
