"""One sweep job: dataset → chunks → index → ranked spans → metrics → files and MLflow."""

from __future__ import annotations

import gc
import json
import logging
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from omegaconf import DictConfig, OmegaConf

import ragsweep
from ragsweep.data.base import DatasetError, load_once
from ragsweep.generation.base import Generation
from ragsweep.metrics.aggregate import summarize
from ragsweep.metrics.evaluate import CHUNKING_METRICS
from ragsweep.metrics.costs import costs_per_query, end_to_end_ms, percentile_summaries, percentiles
from ragsweep.judging.base import VALIDATED_AUC, Verdict
from ragsweep.metrics import judged
from ragsweep.metrics.relevance import context_relevance
from ragsweep.runner.build import ConfigError, Pipeline, build
from ragsweep.runner.judging import (Judgement, JudgingFailed, fail_on_judge_failures, judge_answers, judge_relevance,
                                     judged_scores, relevance_summary, run_summaries, span_labels, write_failed_calls,
                                     write_failed_relevance)
from ragsweep.runner.identity import LABEL_KEY, config_label
from ragsweep.runner.plan import JobNaming, JobPlan, plan_job
from ragsweep.runner.stages import (chunk_dataset, first_stage, generate, latency_sample, located_counts, rerank,
                                    whole_retrieval)
from ragsweep.tracking.mlflow_tracker import FINGERPRINT_TAG, LABEL_TAG, RERUN_TAG, TrackingUnavailable
from ragsweep.tracking.provenance import git_sha, package_versions
from ragsweep.types import Chunk, Dataset, Hit

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunContext:
    """Where a job's results go and the sweep it belongs to: given by its caller (a Hydra job, `Evaluation`)."""

    output_dir: Path
    parent: str | None = None  # the sweep's MLflow parent run; None for a run on its own


def main(cfg: DictConfig, naming: JobNaming | None, context: RunContext) -> float | None:
    """Plan and run one job; return the metric a sweeper optimises.

    Bad config or data ends the process with one line and exit code 2. In a sweep, a job that
    raises is already recorded as FAILED (with its traceback) and the sweep goes on, unless
    `fail_fast=true`, which ends it there.
    """
    metric = cfg.get("optimized_metric")
    name = config_label(naming.overrides, naming.config_name, None) if naming else "run"
    try:
        means = run(plan_job(cfg, naming), context)
    except (ConfigError, DatasetError) as error:
        print(f"ragsweep: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except (GenerationFailed, JudgingFailed, TrackingUnavailable) as error:
        if context.parent is None:  # one run: its FAILED record is in MLflow; the user needs one line
            print(f"ragsweep: error: {error}", file=sys.stderr)
            raise SystemExit(1) from None
        if cfg.get("fail_fast", False):
            print(f"ragsweep: error: job {name} failed and fail_fast=true stops the sweep: {error}", file=sys.stderr)
            raise SystemExit(1) from None
        log.error("job %s failed: %s; it is recorded as FAILED and the sweep goes on", name, error)
        return float("nan") if metric else None
    except Exception as error:
        if context.parent is None:
            raise
        if cfg.get("fail_fast", False):
            print(f"ragsweep: error: job {name} failed and fail_fast=true stops the sweep: {error!r}", file=sys.stderr)
            raise SystemExit(1) from error  # not an Exception, so no launcher carries on past it
        log.exception("job %s failed; it is recorded as FAILED and the sweep goes on (fail_fast=true stops it)", name)
        return float("nan") if metric else None
    return means[metric] if metric else None


def run(plan: JobPlan, context: RunContext, objects: Mapping[str, Any] | None = None) -> dict[str, float]:
    """Build, validate, run and record one planned configuration; return the mean of every metric.

    Inside a sweep (`context.parent`), a configuration that already has a FINISHED run in the experiment
    is not run again unless `+force=true`; its recorded metrics are returned. `objects` are a Python
    caller's own components by group (see `build`).
    """
    pipeline = build(plan, objects=objects)
    dataset = load_once(pipeline.dataset)
    config_id = plan.fingerprint(dataset.fingerprint)
    parent = context.parent
    with _job_lock(pipeline, config_id, plan.label) if parent else nullcontext():
        if parent and not plan.config.get("force", False):
            finished = pipeline.tracker.finished_run(config_id)
            if finished is not None:
                log.info("skipped %s: run %s already finished this configuration (+force=true reruns it)",
                         plan.label, finished.info.run_id)
                pipeline.tracker.note_reused(parent, config_id, finished.info.run_id)
                return dict(finished.data.metrics)
        try:
            return _run_job(pipeline, dataset, config_id, context)
        finally:
            _freeze_loaded_heap(computed=sum(pipeline.cache.misses.values()) > 0)


def _freeze_loaded_heap(computed: bool) -> None:
    """After a process's first job, and after any job that `computed` (missed the stage cache, so it kept new
    chunks, first-stage results or models), move what the process holds out of the cyclic garbage collector's
    reach. A warm job allocates tens of thousands of hits, and every full collection they trigger would rescan
    some 400,000 long-lived objects: 0.2-0.6 s a job on chroma_general, more than the job's own work (profiled;
    benchmarks/grid.py measures the warm grid). Warm jobs compute nothing, so they pay no collection here."""
    if computed or not _HEAP_FROZEN:
        gc.collect()
        gc.freeze()
        _HEAP_FROZEN.append(True)


_HEAP_FROZEN: list[bool] = []


@contextmanager
def _job_lock(pipeline: Pipeline, config_id: str, label: str) -> Iterator[None]:
    """Held while this process runs the configuration, so a second copy of the sweep started at the same time
    waits for it and then finds its FINISHED run instead of running it again (the kernel drops the lock of a
    killed process)."""
    with pipeline.cache.lock(f"job-{config_id}", blocking=False) as held:
        if held:
            yield
            return
    log.info("%s is being run by another process; waiting for it", label)
    with pipeline.cache.lock(f"job-{config_id}"):
        yield


def _run_job(pipeline: Pipeline, dataset: Dataset, config_id: str, context: RunContext) -> dict[str, float]:
    """Run the configuration and record it as one MLflow run (under `context.parent` in a sweep)."""
    plan, output_dir, parent = pipeline.plan, context.output_dir, context.parent
    cfg = plan.config
    label = plan.label
    tags = {"dataset.name": dataset.name, "dataset.fingerprint": dataset.fingerprint,
            FINGERPRINT_TAG: config_id, "ragsweep.sweep": plan.sweep, "ragsweep.git_sha": git_sha(),
            "ragsweep.version": ragsweep.__version__, LABEL_TAG: label,
            **({RERUN_TAG: "export"} if cfg.get(LABEL_KEY) else {}),  # an exported best config run again by hand
            **{f"version.{name}": version for name, version in package_versions().items()}}
    with pipeline.tracker.start_run(label, dict(plan.params), tags, parent, record_dir=output_dir):
        pipeline.tracker.log_dataset(dataset.name, dataset.fingerprint, _dataset_source(cfg), len(dataset.queries))
        seconds: dict[str, float] = {}
        questions = [query.text for query in dataset.queries]
        if plan.whole_retriever:  # it chunked and ranked on its own; its texts are located as spans
            chunks, first, search_ms, located = _timed(
                seconds, "retrieval", lambda: whole_retrieval(pipeline, dataset, questions))
            hits, rerank_ms = first, np.zeros(0)
        else:
            chunks, chunks_key = _timed(seconds, "chunking", lambda: chunk_dataset(pipeline, dataset))
            located = located_counts(chunks_key)
            first, retrieval_key, search_ms = _timed(
                seconds, "retrieval", lambda: first_stage(pipeline, chunks, chunks_key, questions))
            hits, rerank_ms = _timed(seconds, "rerank",
                                     lambda: rerank(pipeline, chunks, questions, first, retrieval_key))
        generations = _timed(seconds, "generation", lambda: generate(pipeline, questions, chunks, hits))
        judgements = _timed(seconds, "judging", lambda: judge_answers(pipeline, questions, chunks, hits, generations))
        relevance = _timed(seconds, "relevance", lambda: judge_relevance(pipeline, questions, chunks, hits))
        labels = span_labels(dataset.queries, chunks, hits, pipeline.k)
        per_query, diagnostics = _timed(
            seconds, "scoring", lambda: _score(pipeline, dataset, chunks, hits, generations, judgements, labels,
                                               relevance))
        corpora = [query.corpus for query in dataset.queries]
        summary = summarize(per_query, corpora, cfg.get("bootstrap_samples", 1000))
        timings = latency_metrics(search_ms, rerank_ms, generations)
        if generations is not None:  # a retrieval-only job's metrics.json keeps its metrics
            costs = costs_per_query(generations, pipeline.evaluator.tokenizer.count)
            summary.update(summarize(costs, corpora, cfg.get("bootstrap_samples", 1000)))
            summary.update(latency_metrics(search_ms, rerank_ms, generations, summaries=True))
        if judgements is not None:
            summary.update(run_summaries(pipeline, [query.id for query in dataset.queries], judgements))
        if relevance is not None:
            summary.update(relevance_summary(labels, relevance))
            _warn_unvalidated_relevance(summary)
        files = _write_results(output_dir, cfg, dataset, chunks, hits, per_query, summary, pipeline.k, generations,
                               diagnostics, _relevance_records(labels, relevance))
        means = {name: values["mean"] for name, values in summary.items() if "mean" in values}
        pipeline.tracker.log_metrics(
            {**means, **{f"{name}_std": v["std"] for name, v in summary.items() if "std" in v},
             **({"n_chunks": float(len(chunks))} if pipeline.chunker else {}),
             **{name: float(count) for name, count in located.items()},
             **{f"seconds_{stage}": s for stage, s in seconds.items()},
             **timings, **{f"dataset_{name}": float(count) for name, count in dataset.loading.items()},
             **{name: values["value"] for name, values in summary.items() if "value" in values},
             **{f"{name}_{end}": values["ci95"][side] for name, values in summary.items()
                if name.endswith("_ppi") for side, end in ((0, "low"), (1, "high"))},
             **({"judge_auc": float(pipeline.judge_auc)} if pipeline.judge_auc is not None else {}),
             **pipeline.cache.counts()}
        )
        if generations is not None:
            pipeline.tracker.log_query_traces(
                query_traces(dataset, chunks, first, hits, generations, search_ms, rerank_ms, pipeline))
            files += _check_errors(output_dir, dataset, generations, pipeline.max_error_rate)
        if judgements is not None:
            files += write_failed_calls(output_dir, [query.id for query in dataset.queries], judgements)
        if relevance is not None:
            files += write_failed_relevance(output_dir, [query.id for query in dataset.queries], relevance)
        pipeline.tracker.log_artifacts(*files)
        if generations is not None:
            _fail_on_errors(generations, pipeline.max_error_rate, output_dir)
        if judgements is not None:
            fail_on_judge_failures(judgements, pipeline.max_failure_rate, output_dir)
        if relevance is not None:
            _fail_on_relevance_failures(summary, pipeline.relevance_max_failure_rate)
    log.info("%s", " ".join(f"{name}={value:.4f}" for name, value in means.items()))
    return means


class GenerationFailed(RuntimeError):
    """More questions failed to generate than `generator.max_error_rate` allows."""


def _score(pipeline: Pipeline, dataset: Dataset, chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]],
           generations: Sequence[Generation] | None, judgements: Sequence[Judgement] | None,
           labels: Sequence[Sequence[int | None]],
           relevance: Sequence[Sequence[Verdict]] | None) -> tuple[list[dict], list[dict] | None]:
    """Per question: span metrics and context_relevance from the span labels (with a relevance judge, its
    context_relevance_judged too); with a generator its answer metrics (where it has an answer and
    reference answers); with a judge its judged metrics, and each question's claims and diagnostics."""
    per_query = pipeline.evaluator.score(dataset, chunks, hits, pipeline.k)
    if pipeline.plan.whole_retriever:  # chunks are only what it returned, not its whole chunking
        per_query = [{name: value for name, value in scores.items() if name not in CHUNKING_METRICS}
                     for scores in per_query]
    for position, scores in enumerate(per_query):
        found = {"context_relevance": context_relevance(labels[position]),
                 "context_relevance_judged": judged.context_relevance([v.score for v in relevance[position]])
                 if relevance is not None else None}
        scores.update({name: float(value) for name, value in found.items() if value is not None})
    if generations is None:
        return per_query, None
    answers = pipeline.evaluator.score_answers([made.answer for made in generations],
                                               [query.answers for query in dataset.queries])
    per_query = [{**spans, **scores} for spans, scores in zip(per_query, answers, strict=True)]
    if judgements is None:
        return per_query, None
    judge, cites = pipeline.judge.component, pipeline.prompt.cites
    diagnostics = []
    for scores, query, made, judgement, passages in zip(per_query, dataset.queries, generations, judgements, labels,
                                                        strict=True):
        found, diagnosis = judged_scores(judgement, query.text, made.answer, judge.threshold,
                                         pipeline.triad_weights, cites, passages)
        scores.update(found)
        diagnostics.append({"claims": [{"text": claim.text, "citations": list(claim.citations),
                                        "support": [v.score for v in row], "status": [v.status for v in row]}
                                       for claim, row in zip(judgement.claims, judgement.support, strict=True)],
                            "diagnostics": diagnosis})
    return per_query, diagnostics


def _warn_unvalidated_relevance(summary: dict) -> None:
    auc = summary.get("context_relevance_auc")
    if auc is None:
        log.warning("context_relevance_judged is unvalidated: the run's passages hold no pair of both span labels "
                    "to measure the relevance judge against")
    elif auc["value"] < VALIDATED_AUC:
        log.warning("context_relevance_judged is unvalidated: the relevance judge's AUC against the span labels is "
                    "%.3f (n=%d), below %.1f", auc["value"], auc["n"], VALIDATED_AUC)


def _fail_on_relevance_failures(summary: dict, max_failure_rate: float) -> None:
    rate = summary["relevance_judge_failure_rate"]["value"]
    if rate > max_failure_rate:
        raise JudgingFailed(f"{rate:.1%} of relevance judge calls failed, more than relevance_judge.max_failure_rate="
                            f"{max_failure_rate} allows; the failed calls are in relevance_failures.jsonl")


def latency_metrics(search_ms: np.ndarray, rerank_ms: np.ndarray, generations: Sequence[Generation] | None = None,
                    summaries: bool = False) -> dict:
    """p50 and p95 milliseconds per question of search, rerank, generation and end to end (`latency_ms_*`);
    with `summaries`, each as metrics.json holds it (value, questions, bootstrap CI).

    Search and rerank are timed one question at a time on the latency sample, after a warm-up call,
    when the stage ran (kept with its cached results); generation on every answered question, when
    it was generated. End to end adds the three for each question of the latency sample.
    """
    measure = percentile_summaries if summaries else percentiles
    generation_ms = None
    timings = {**measure("search_ms", search_ms), **measure("rerank_ms", rerank_ms)}
    if generations is not None:
        timings.update(measure("generation_ms", np.array([made.latency_ms for made in generations
                                                          if made.error is None])))
        sampled = [generations[i] for i in latency_sample(len(generations))]
        generation_ms = np.array([np.nan if made.error else made.latency_ms for made in sampled])
    timings.update(measure("latency_ms", end_to_end_ms(search_ms, rerank_ms, generation_ms)))
    return timings


def query_traces(dataset: Dataset, chunks: Sequence[Chunk], first: Sequence[Sequence[Hit]],
                 hits: Sequence[Sequence[Hit]], generations: Sequence[Generation], search_ms: np.ndarray,
                 rerank_ms: np.ndarray, pipeline) -> list[dict]:
    """What each question of the latency sample went through (the questions whose every stage was timed),
    for the tracker's traces: retrieval, rerank and generation with their inputs, outputs and milliseconds."""
    def documents(query_hits: Sequence[Hit]) -> list[dict]:
        return [{**chunks[hit.index].span.to_dict(), "text": chunks[hit.index].text, "score": hit.score}
                for hit in query_hits[: pipeline.k]]

    traces = []
    for row, position in enumerate(latency_sample(len(dataset.queries))):
        query, made = dataset.queries[position], generations[position]
        stages = [{"name": "retrieval", "span_type": "RETRIEVER", "inputs": {"question": query.text},
                   "outputs": documents(first[position]), "ms": float(search_ms[row])}]
        if len(rerank_ms):
            stages.append({"name": "rerank", "span_type": "RERANKER", "inputs": {"question": query.text},
                           "outputs": documents(hits[position]), "ms": float(rerank_ms[row])})
        passages = tuple(chunks[hit.index].text for hit in hits[position][: pipeline.k])
        stages.append({"name": "generation", "span_type": "LLM",
                       "inputs": {"messages": list(pipeline.prompt.render(query.text, passages))},
                       "outputs": {"answer": made.answer, "prompt_tokens": made.prompt_tokens,
                                   "completion_tokens": made.completion_tokens},
                       "ms": made.latency_ms})
        traces.append({"id": query.id, "question": query.text, "answer": made.answer, "error": made.error,
                       "spans": stages})
    return traces


def _check_errors(output_dir: Path, dataset: Dataset, generations: Sequence[Generation],
                  max_error_rate: float) -> list[Path]:
    """`generation_errors.jsonl`, one line per question whose generation failed (none: no file)."""
    failed = [(query, made) for query, made in zip(dataset.queries, generations, strict=True) if made.error]
    if not failed:
        return []
    path = output_dir / "generation_errors.jsonl"
    with path.open("wb") as out:
        for query, made in failed:
            out.write(orjson.dumps({"id": query.id, "question": query.text, "error": made.error},
                                   option=orjson.OPT_APPEND_NEWLINE))
    log.warning("generation failed for %d of %d questions (generator.max_error_rate=%s); see %s",
                len(failed), len(generations), max_error_rate, path)
    return [path]


def _fail_on_errors(generations: Sequence[Generation], max_error_rate: float, output_dir: Path) -> None:
    failed = sum(made.error is not None for made in generations)
    if failed / len(generations) > max_error_rate:
        first = next(made.error for made in generations if made.error)
        raise GenerationFailed(
            f"generation failed for {failed} of {len(generations)} questions, more than generator.max_error_rate="
            f"{max_error_rate} allows (first error: {first}); the questions are in "
            f"{output_dir / 'generation_errors.jsonl'}; a rerun retries only them")


def _dataset_source(cfg: DictConfig) -> str:
    """Where the dataset came from, for MLflow's Dataset column: its path, or its loader for built-in data."""
    settings = OmegaConf.to_container(cfg.dataset, resolve=True)
    return str(settings.get("path") or settings.get("_target_"))


def _write_results(output_dir: Path, cfg: DictConfig, dataset: Dataset, chunks: Sequence[Chunk],
                   hits: Sequence[Sequence[Hit]], per_query: Sequence[dict], summary: dict, k: int,
                   generations: Sequence[Generation] | None = None,
                   diagnostics: Sequence[dict] | None = None, relevance: Sequence[dict] | None = None) -> list[Path]:
    """metrics.json, per_query.jsonl and config.yaml: the stable contract of a job's output folder."""
    output_dir.mkdir(parents=True, exist_ok=True)
    metrics_path = output_dir / "metrics.json"
    metrics_path.write_text(json.dumps(summary, indent=2) + "\n")
    per_query_path = output_dir / "per_query.jsonl"
    with per_query_path.open("wb") as out:
        for position, (query, query_hits, scores) in enumerate(zip(dataset.queries, hits, per_query, strict=True)):
            retrieved = [{**chunks[hit.index].span.to_dict(), "score": hit.score} for hit in query_hits[:k]]
            record = {"id": query.id, "question": query.text,
                      "references": [ref.to_dict() for ref in query.references],
                      "retrieved": retrieved, "metrics": scores}
            if generations is not None:
                made = generations[position]
                record.update(answer=made.answer, reference_answers=list(query.answers), generation=made.to_dict())
            if relevance is not None:
                record["relevance"] = relevance[position]
            if diagnostics is not None:
                record["judged"] = diagnostics[position]
            out.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY))
    config_path = output_dir / "config.yaml"
    config_path.write_text(OmegaConf.to_yaml(cfg, resolve=True))
    return [metrics_path, per_query_path, config_path]


def _relevance_records(labels: Sequence[Sequence[int | None]],
                       relevance: Sequence[Sequence[Verdict]] | None) -> list[dict]:
    """Per question, its passages' span labels and, with a relevance judge, its scores (None: a failed call)."""
    if relevance is None:
        return [{"labels": list(row)} for row in labels]
    return [{"labels": list(row), "scores": [v.score for v in judged_row]}
            for row, judged_row in zip(labels, relevance, strict=True)]


def _timed(seconds: dict[str, float], stage: str, work):
    started = time.perf_counter()
    result = work()
    seconds[stage] = time.perf_counter() - started
    return result
