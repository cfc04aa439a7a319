"""One sweep job: dataset → chunks → index → ranked spans → metrics → files and MLflow."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import orjson
from omegaconf import DictConfig, OmegaConf, open_dict

import ragsweep
from ragsweep.data.base import DatasetError, load_once
from ragsweep.metrics.aggregate import summarize
from ragsweep.runner.build import ConfigError, build
from ragsweep.runner.identity import LABEL_TAG, config_fingerprint, git_sha, job_identity, package_versions, sweep_name
from ragsweep.runner.stages import chunk_dataset, first_stage, rerank
from ragsweep.tracking.mlflow_tracker import FINGERPRINT_TAG, parent_run_id
from ragsweep.types import Chunk, Dataset, Hit

log = logging.getLogger(__name__)


def main(cfg: DictConfig, output_dir: Path | None = None) -> float | None:
    """Run one job; return the metric a sweeper optimises.

    Bad config or data ends the process with one line and exit code 2. In a sweep, a job that
    raises is already recorded as FAILED (with its traceback) and the sweep goes on, unless
    `fail_fast=true`, which ends it there.
    """
    metric = cfg.get("optimized_metric")
    try:
        means = run(cfg, output_dir)
    except (ConfigError, DatasetError) as error:
        print(f"ragsweep: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception as error:
        if parent_run_id() is None:
            raise
        if cfg.get("fail_fast", False):
            print(f"ragsweep: error: job {_run_name()} failed and fail_fast=true stops the sweep: {error!r}",
                  file=sys.stderr)
            raise SystemExit(1) from error  # not an Exception, so no launcher carries on past it
        log.exception("job %s failed; it is recorded as FAILED and the sweep goes on (fail_fast=true stops it)",
                      _run_name())
        return float("nan") if metric else None
    return means[metric] if metric else None


def run(cfg: DictConfig, output_dir: Path | None = None) -> dict[str, float]:
    """Build, validate, run and record one configuration; return the mean of every metric.

    Inside a sweep (a parent run exists), a configuration that already has a FINISHED run in the
    experiment is not run again unless `+force=true`; its recorded metrics are returned.
    """
    pipeline = build(cfg)
    dataset = load_once(pipeline.dataset)
    if cfg.depth != pipeline.depth:  # record the depth that ran, so params and fingerprint say what was computed
        log.info("depth=%s raised to %d (k or reranker.candidates is larger)", cfg.depth, pipeline.depth)
        with open_dict(cfg):
            cfg.depth = pipeline.depth
    resolved = OmegaConf.to_container(cfg, resolve=True)
    config_id = config_fingerprint(resolved, dataset.fingerprint)
    parent = parent_run_id()
    if parent and not cfg.get("force", False):
        finished = pipeline.tracker.finished_run(config_id)
        if finished is not None:
            log.info("skipped %s: run %s already finished this configuration (+force=true reruns it)",
                     _run_name(), finished.info.run_id)
            pipeline.tracker.note_reused(parent, config_id, finished.info.run_id)
            return dict(finished.data.metrics)
    output_dir = output_dir or _hydra_output_dir()
    label, choices = job_identity(cfg)  # chunker=fixed,k=3 and {"chunker": "fixed", ...}; not in the fingerprint
    params = {**_flatten(resolved), **choices}
    tags = {"dataset.name": dataset.name, "dataset.fingerprint": dataset.fingerprint,
            FINGERPRINT_TAG: config_id, "ragsweep.sweep": _sweep_name(), "ragsweep.git_sha": git_sha(),
            "ragsweep.version": ragsweep.__version__, LABEL_TAG: label,
            **{f"version.{name}": version for name, version in package_versions().items()}}
    with pipeline.tracker.start_run(label, params, tags, parent):
        seconds: dict[str, float] = {}
        questions = [query.text for query in dataset.queries]
        chunks, chunks_key = _timed(seconds, "chunking", lambda: chunk_dataset(pipeline, dataset))
        first, retrieval_key, search_ms = _timed(
            seconds, "retrieval", lambda: first_stage(pipeline, chunks, chunks_key, questions))
        hits, rerank_ms = _timed(seconds, "rerank", lambda: rerank(pipeline, chunks, questions, first, retrieval_key))
        per_query = _timed(seconds, "scoring", lambda: pipeline.evaluator.score(dataset, chunks, hits, pipeline.k))
        summary = summarize(per_query, [query.corpus for query in dataset.queries], cfg.get("bootstrap_samples", 1000))
        files = _write_results(output_dir, cfg, dataset, chunks, hits, per_query, summary, pipeline.k)
        means = {name: values["mean"] for name, values in summary.items()}
        pipeline.tracker.log_metrics(
            {**means, **{f"{name}_std": v["std"] for name, v in summary.items()},
             "n_chunks": float(len(chunks)), **{f"seconds_{stage}": s for stage, s in seconds.items()},
             **latency_metrics(search_ms, rerank_ms),
             **pipeline.cache.counts()}
        )
        pipeline.tracker.log_artifacts(*files)
    log.info("%s", " ".join(f"{name}={value:.4f}" for name, value in means.items()))
    return means


def latency_metrics(search_ms: np.ndarray, rerank_ms: np.ndarray) -> dict[str, float]:
    """p50 and p95 milliseconds per question of search, rerank and both (`latency_ms_*`), from the
    questions timed one at a time after a warm-up call when the stage ran (kept with its results)."""
    stages = {"search": search_ms, **({"rerank": rerank_ms} if len(rerank_ms) else {}),
              "latency": search_ms + rerank_ms if len(rerank_ms) else search_ms}
    return {f"{name}_ms_p{q}": float(np.percentile(values, q))
            for name, values in stages.items() for q in (50, 95) if len(values)}


def _write_results(output_dir: Path, cfg: DictConfig, dataset: Dataset, chunks: Sequence[Chunk],
                   hits: Sequence[Sequence[Hit]], per_query: Sequence[dict], summary: dict, k: int) -> list[Path]:
    """metrics.json, per_query.jsonl and config.yaml: the stable contract of a job's output folder."""
    output_dir.mkdir(parents=True, exist_ok=True)
    metrics_path = output_dir / "metrics.json"
    metrics_path.write_text(json.dumps(summary, indent=2) + "\n")
    per_query_path = output_dir / "per_query.jsonl"
    with per_query_path.open("wb") as out:
        for query, query_hits, scores in zip(dataset.queries, hits, per_query, strict=True):
            retrieved = [{**chunks[hit.index].span.to_dict(), "score": hit.score} for hit in query_hits[:k]]
            record = {"id": query.id, "question": query.text,
                      "references": [ref.to_dict() for ref in query.references],
                      "retrieved": retrieved, "metrics": scores}
            out.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY))
    config_path = output_dir / "config.yaml"
    config_path.write_text(OmegaConf.to_yaml(cfg, resolve=True))
    return [metrics_path, per_query_path, config_path]


def _timed(seconds: dict[str, float], stage: str, work):
    started = time.perf_counter()
    result = work()
    seconds[stage] = time.perf_counter() - started
    return result


def _flatten(tree, prefix: str = "") -> dict[str, object]:
    if not isinstance(tree, dict):
        return {prefix: tree}
    flat: dict[str, object] = {}
    for key, value in tree.items():
        flat.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _hydra_output_dir() -> Path:
    from hydra.core.hydra_config import HydraConfig

    return Path(HydraConfig.get().runtime.output_dir)


def _run_name() -> str:
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return "run"
    hydra = HydraConfig.get()
    if hydra.job.override_dirname:
        return hydra.job.override_dirname
    return "defaults" if hydra.job.config_name == "config" else hydra.job.config_name  # e.g. best/<name>


def _sweep_name() -> str:
    from hydra.core.hydra_config import HydraConfig

    return sweep_name(HydraConfig.get().runtime.choices if HydraConfig.initialized() else {})
