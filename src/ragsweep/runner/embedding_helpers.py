"""Embedding helpers: a parallel sweep's idle workers share out the passage embedding of the jobs it runs.

A sweep with fewer jobs than its launcher has workers (one configuration on two joblib workers, a small grid on
a Ray cluster) would leave workers idle while a job embeds a million chunks alone. The sweeper adds a helper
job per idle worker: a copy of a job's overrides plus `+embedding_helper=true`. A helper chunks the job's
dataset (or waits for the job's chunking and reads it), takes the shards of the job's embedding that no process
holds (`CachedEmbedder.fill`), and ends; the job waits for the shards its helpers hold, as it does for another
job's. A helper records no MLflow run: it writes `embedding_helper.json` (texts embedded, where) in its job
folder, and a helper that fails only logs why, since the job it helps embeds whatever the helper did not.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ragsweep.data.loading import load_once
from ragsweep.runner.build import Pipeline, build
from ragsweep.runner.plan import JobNaming, plan_job
from ragsweep.runner.stages import chunk_dataset
from ragsweep.runner.workers import launcher_workers
from ragsweep.tracking.processes import process_tags
from ragsweep.types import Dataset

log = logging.getLogger(__name__)

HELPER_KEY = "embedding_helper"
RECORD = "embedding_helper.json"


def helper_jobs(config: DictConfig, batch: Sequence[Sequence[str]]) -> list[list[str]]:
    """One helper for each worker the batch leaves idle, given the batch's jobs in turn; none when the stage
    cache is off (helpers share work through it)."""
    if not batch or not (config.get("cache") or {}).get("enabled", True):
        return []
    idle = launcher_workers(config) - len(batch)
    if idle <= 0:
        return []
    helpers = [[*batch[number % len(batch)], f"+{HELPER_KEY}=true"] for number in range(idle)]
    log.info("%d idle worker(s) help embed the passages of %s", idle,
             ", ".join(" ".join(job) or "defaults" for job in batch[:idle]))
    return helpers


def is_helper(cfg: DictConfig) -> bool:
    return bool(cfg.get(HELPER_KEY, False))


def help_embed(cfg: DictConfig, naming: JobNaming | None, output_dir: Path) -> None:
    """Run as a helper: embed the passages of the job `cfg` (without HELPER_KEY) describes into the cache,
    unless that configuration already has a FINISHED run (the job will not embed then either)."""
    job = OmegaConf.masked_copy(cfg, [key for key in cfg if key != HELPER_KEY])
    label = "defaults"
    try:
        plan = plan_job(job, naming)
        label = plan.label
        pipeline = build(plan, preflight=False)
        dataset = load_once(pipeline.dataset)
        finished = not plan.config.get("force", False) and pipeline.tracker.finished_run(
            plan.fingerprint(dataset.fingerprint)) is not None
        chunks, embedded = (0, 0) if finished else embed_passages(pipeline, dataset)
    except Exception as error:  # noqa: BLE001  (the job it helps reports its own failures)
        log.warning("the embedding helper of %s stopped: %s", label, error)
        return
    log.info("the embedding helper of %s embedded %d of %d passages", label, embedded, chunks)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / RECORD).write_text(json.dumps({"chunks": chunks, "embedded": embedded, **process_tags()}))


def embed_passages(pipeline: Pipeline, dataset: Dataset) -> tuple[int, int]:
    """A helper's work: the passages of the job's chunking embedded into the cache, their shards shared out with
    the job and its other helpers, none of the vectors kept. Returns the chunks and how many of them this process
    embedded; (0, 0) when the job's retriever embeds no passages."""
    retriever = pipeline.retriever.component
    sides = retriever.ranked_lists().values() if hasattr(retriever, "fuse") else [retriever]
    embedding = [side for side in sides if hasattr(side, "embed_passages")]
    if pipeline.chunker is None or not embedding:
        return 0, 0
    chunks, _ = chunk_dataset(pipeline, dataset)
    return len(chunks), sum(side.embed_passages(chunks) for side in embedding)
