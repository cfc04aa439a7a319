"""One sweep job: dataset → chunks → index → ranked spans → metrics → files and MLflow."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

import ragsweep
from ragsweep.data.base import DatasetError, load_once
from ragsweep.metrics.aggregate import summarize
from ragsweep.runner.build import ConfigError, build
from ragsweep.runner.stages import chunk_dataset, first_stage, rerank
from ragsweep.types import Chunk, Dataset, Hit

log = logging.getLogger(__name__)


def main(cfg: DictConfig, output_dir: Path | None = None) -> float | None:
    """Run one job; bad config or data ends the process with one line and exit code 2."""
    try:
        means = run(cfg, output_dir)
    except (ConfigError, DatasetError) as error:
        print(f"ragsweep: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    metric = cfg.get("optimized_metric")
    return means[metric] if metric else None


def run(cfg: DictConfig, output_dir: Path | None = None) -> dict[str, float]:
    """Build, validate, run and record one configuration; return the mean of every metric."""
    pipeline = build(cfg)
    dataset = load_once(pipeline.dataset)
    output_dir = output_dir or _hydra_output_dir()
    params = _flatten(OmegaConf.to_container(cfg, resolve=True))
    tags = {"dataset.name": dataset.name, "dataset.fingerprint": dataset.fingerprint,
            "ragsweep.version": ragsweep.__version__}
    with pipeline.tracker.start_run(_run_name(), params, tags):
        seconds: dict[str, float] = {}
        questions = [query.text for query in dataset.queries]
        chunks, chunks_key = _timed(seconds, "chunking", lambda: chunk_dataset(pipeline, dataset))
        first, retrieval_key = _timed(seconds, "retrieval", lambda: first_stage(pipeline, chunks, chunks_key, questions))
        hits = _timed(seconds, "rerank", lambda: rerank(pipeline, chunks, questions, first, retrieval_key))
        per_query = _timed(seconds, "scoring", lambda: pipeline.evaluator.score(dataset, chunks, hits, pipeline.k))
        summary = summarize(per_query, [query.corpus for query in dataset.queries], cfg.get("bootstrap_samples", 1000))
        files = _write_results(output_dir, cfg, dataset, chunks, hits, per_query, summary, pipeline.k)
        means = {name: values["mean"] for name, values in summary.items()}
        pipeline.tracker.log_metrics(
            {**means, **{f"{name}_std": v["std"] for name, v in summary.items()},
             "n_chunks": float(len(chunks)), **{f"seconds_{stage}": s for stage, s in seconds.items()},
             **pipeline.cache.counts()}
        )
        pipeline.tracker.log_artifacts(*files)
    log.info("%s", " ".join(f"{name}={value:.4f}" for name, value in means.items()))
    return means


def _write_results(output_dir: Path, cfg: DictConfig, dataset: Dataset, chunks: Sequence[Chunk],
                   hits: Sequence[Sequence[Hit]], per_query: Sequence[dict], summary: dict, k: int) -> list[Path]:
    """metrics.json, per_query.jsonl and config.yaml: the stable contract of a job's output folder."""
    output_dir.mkdir(parents=True, exist_ok=True)
    metrics_path = output_dir / "metrics.json"
    metrics_path.write_text(json.dumps(summary, indent=2) + "\n")
    per_query_path = output_dir / "per_query.jsonl"
    with per_query_path.open("w") as out:
        for query, query_hits, scores in zip(dataset.queries, hits, per_query, strict=True):
            retrieved = [{**chunks[hit.index].span.to_dict(), "score": hit.score} for hit in query_hits[:k]]
            record = {"id": query.id, "question": query.text,
                      "references": [ref.to_dict() for ref in query.references],
                      "retrieved": retrieved, "metrics": scores}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
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
    return HydraConfig.get().job.override_dirname or "defaults"
