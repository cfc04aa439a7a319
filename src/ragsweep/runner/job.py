"""One configuration's job: its questions through the plan's stages, scored, written to its folder and recorded as
one run (in a race, one round of it)."""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from omegaconf import DictConfig, OmegaConf

import ragsweep
from ragsweep.data.loading import load_seconds, warn_if_few_questions, warn_if_questions_repeat
from ragsweep.identity import LABEL_KEY, versions_text
from ragsweep.metrics import registry
from ragsweep.metrics.aggregate import summarize
from ragsweep.runner.answer_stages import answer_questions, answer_stages
from ragsweep.runner.build import Pipeline
from ragsweep.runner.contention import say_if_cores_are_taken
from ragsweep.runner.context import passed_on
from ragsweep.runner.corrections import judge_source
from ragsweep.runner.costing import passages_cost, question_costs, search_calls
from ragsweep.runner.failures import fail_on_rewrite_errors
from ragsweep.runner.outputs import query_traces, write_latency, write_repairs, write_results
from ragsweep.runner.racing.rounds import RACE_KEY, RaceRound, in_dataset_order
from ragsweep.runner.ranking import rank_questions, timed_stage
from ragsweep.runner.relevance import relevance_records, span_labels
from ragsweep.runner.rewriting import rewrite_metrics, rewritten
from ragsweep.runner.scoring import latency_metrics, latency_samples, score_questions
from ragsweep.runner.whole_documents import record_chunking
from ragsweep.tracking.base import RunExtension
from ragsweep.tracking.provenance import git_sha, machine_kernels, package_versions
from ragsweep.tracking.tags import (FINGERPRINT_TAG, JUDGE_TAG, LABEL_TAG, RACE_FINGERPRINT_TAG, RACE_SEED_TAG,
                                    RERUN_TAG, UNVERSIONED_TAG, VERSIONS_TAG)
from ragsweep.types import Dataset

if TYPE_CHECKING:
    from ragsweep.runner.run import RunContext

log = logging.getLogger(__name__)


def run_job(pipeline: Pipeline, dataset: Dataset, config_id: str, context: RunContext,
             race: tuple[RaceRound, Dataset, RunExtension] | None = None) -> dict[str, float]:
    """Run the configuration and record it as one MLflow run (under `context.parent` in a sweep). In a race,
    `race` is the round, the whole dataset (chunked, tagged and logged as the run's dataset) and how the round
    extends the configuration's run."""
    plan, output_dir, parent = pipeline.plan, context.output_dir, context.parent
    cfg = plan.config
    label = plan.label
    whole = race[1] if race else dataset
    identity = {FINGERPRINT_TAG: config_id, UNVERSIONED_TAG: plan.unversioned_fingerprint(whole.fingerprint),
                **({VERSIONS_TAG: versions_text(plan.versions)} if plan.versions else {})}
    if race is not None:
        asked = len(dataset.queries)
        identity = {RACE_FINGERPRINT_TAG: config_id, RACE_SEED_TAG: str(race[0].seed),
                    **(identity if asked == len(whole.queries) else {})}
    tags = {"dataset.name": dataset.name, "dataset.fingerprint": whole.fingerprint,
            **identity, "ragsweep.sweep": plan.sweep, "ragsweep.git_sha": git_sha(),
            "ragsweep.version": ragsweep.__version__, LABEL_TAG: label,
            **({RERUN_TAG: "export"} if cfg.get(LABEL_KEY) else {}),  # an exported best config run again by hand
            **({JUDGE_TAG: judge_source(pipeline)} if pipeline.judge is not None else {}),
            **{f"version.{name}": version for name, version in package_versions().items()}, **machine_kernels()}
    with pipeline.tracker.start_run(label, dict(plan.params), tags, parent, record_dir=output_dir,
                                    extend=race[2] if race else None):
        pipeline.tracker.log_dataset(dataset.name, whole.fingerprint, dataset_source(cfg), len(whole.queries))
        seconds: dict[str, float] = {"loading": load_seconds(whole)}
        warn_if_few_questions(whole)
        warn_if_questions_repeat(whole)
        repaired = write_repairs(output_dir, whole)
        if repaired is not None:
            pipeline.tracker.log_artifacts(repaired)
        busy_elsewhere = say_if_cores_are_taken()
        questions = [query.text for query in dataset.queries]
        shards = race[0].shards(len(whole.queries)) if race else [(0, len(questions))]
        ranked = rank_questions(pipeline, whole, questions, shards, partial(rewritten, pipeline), seconds)
        chunks, located, first, hits = ranked.chunks, ranked.located, ranked.first, ranked.hits
        record_chunking(plan, whole, len(chunks) if pipeline.chunker else None, output_dir)
        search_ms, rerank_ms, timed, rewrites = ranked.search_ms, ranked.rerank_ms, ranked.timed, ranked.rewrites
        every_question = len(dataset.queries) == len(whole.queries)  # a plain run, or a race's last round
        if race is not None and every_question:  # the last round: the dataset's order, so its sums are a plain run's
            order = race[0].order(len(whole.queries))
            first, hits, timed = in_dataset_order(order, first), in_dataset_order(order, hits), [order[p] for p in timed]
            rewrites = in_dataset_order(order, rewrites) if rewrites is not None else None
            dataset, questions = whole, [query.text for query in whole.queries]
        context = passed_on(pipeline, questions, chunks, hits, whole.documents)
        passages, passed = context.chunks, context.hits
        answered = answer_questions(pipeline, questions, passages, passed, seconds)
        generations, judgements, relevance = answered.generations, answered.judgements, answered.relevance
        labels = span_labels(dataset.queries, passages, passed, plan.k)
        per_query, diagnostics = timed_stage(
            seconds, "scoring",
            lambda: score_questions(pipeline, dataset, chunks, context, generations, judgements, labels, relevance))
        samples = latency_samples(search_ms, rerank_ms, generations, timed)
        count_tokens = pipeline.evaluator.tokenizer.count
        searched = search_calls(pipeline, [made.texts for made in rewrites] if rewrites is not None
                                else [(question,) for question in questions], chunks, first, count_tokens)
        costs = question_costs(pipeline, len(per_query), samples, rewrites, generations, judgements, relevance,
                               searched)
        for scores, cost in zip(per_query, costs, strict=True):
            scores["cost_per_question"] = cost
        corpora = [query.corpus for query in dataset.queries]
        passages = passages_cost(pipeline, [chunk.search_text for chunk in chunks], count_tokens)
        summary = {**summarize(per_query, corpora, cfg.get("bootstrap_samples", 1000)),
                   "cost_total": {"value": float(sum(costs)) + passages, "n": len(costs)}}
        timings = latency_metrics(samples)
        stages = answer_stages(pipeline, dataset, generations, judgements, relevance, labels, samples)
        for stage in stages:
            summary.update(stage.summaries())
        resolved = {**plan.resolved, RACE_KEY: race[0].setting()} if race else plan.resolved  # a race: this round
        files = timed_stage(seconds, "writing", lambda: write_results(
            output_dir, resolved, dataset, chunks, context, per_query, summary, generations, diagnostics,
            relevance_records(labels, relevance), rewrites))
        files.append(write_latency(output_dir, samples))
        means = {name: values["mean"] for name, values in summary.items() if "mean" in values}
        pipeline.tracker.log_metrics(
            {**means, **{registry.std_name(name): v["std"] for name, v in summary.items() if "std" in v},
             **({"n_chunks": float(len(chunks))} if pipeline.chunker else {}),
             **{name: float(count) for name, count in located.items()},
             **{f"seconds_{stage}": s for stage, s in seconds.items()},
             **timings, **{f"dataset_{name}": float(count) for name, count in dataset.loading.items()},
             **{name: values["value"] for name, values in summary.items() if "value" in values},
             **{end: values["ci95"][side] for name, values in summary.items() if name.endswith("_corrected")
                for side, end in enumerate(registry.interval_names(name))},
             **({"judge_auc": float(pipeline.judge_auc)} if pipeline.judge_auc is not None else {}),
             **({"cores_busy_elsewhere": busy_elsewhere} if busy_elsewhere is not None else {}),
             **rewrite_metrics(rewrites), **pipeline.cache.counts()}
        )
        if plan.generates and every_question:  # a race traces a run once, in its round of every question
            pipeline.tracker.log_query_traces(
                query_traces(dataset, chunks, first, hits, context, generations, search_ms, rerank_ms, pipeline,
                             judgements, timed))
        for stage in stages:
            files += stage.failures(output_dir)
        pipeline.tracker.log_artifacts(*files)
        for stage in stages:
            stage.check(summary, output_dir)
        fail_on_rewrite_errors(rewrites, pipeline.query_max_failure_rate, output_dir)
    log.info("%s", " ".join(f"{name}={value:.4f}" for name, value in means.items()))
    return {**means, **{name: float(value) for name, value in timings.items()},
            **{name: values["value"] for name, values in summary.items() if "value" in values}}


def dataset_source(cfg: DictConfig) -> str:
    """Where the dataset came from, for MLflow's Dataset column: its path, or its loader for built-in data."""
    settings = OmegaConf.to_container(cfg.dataset, resolve=True)
    return str(settings.get("path") or settings.get("_target_"))
