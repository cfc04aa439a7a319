"""What a job leaves behind: its output folder (the output contract) and the traces the tracker records."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import yaml
from omegaconf._utils import get_omega_conf_dumper

from ragsweep import per_query as per_query_file
from ragsweep.generation.base import Generation
from ragsweep.judging.calibration.feedback import claim_feedback
from ragsweep.query.base import Rewrite
from ragsweep.runner.build import Pipeline
from ragsweep.runner.context import Context
from ragsweep.runner.corrections import judge_source
from ragsweep.runner.judge_stage import Judgement
from ragsweep.runner.stages import latency_sample
from ragsweep.types import Chunk, Dataset, Document, Hit, PagedDocument

log = logging.getLogger(__name__)


def write_results(output_dir: Path, config: Mapping[str, Any], dataset: Dataset, chunks: Sequence[Chunk],
                  context: Context, per_query: Sequence[dict], summary: dict,
                  generations: Sequence[Generation] | None = None, diagnostics: Sequence[dict] | None = None,
                  relevance: Sequence[dict] | None = None, rewrites: Sequence[Rewrite] | None = None) -> list[Path]:
    """metrics.json, per_query.jsonl and config.yaml (`config`, the job's resolved config tree): the stable
    contract of a job's output folder. A question's `retrieved` are the hits its cut-off kept; with an augmenter or
    a compressor, `context` holds the passages passed on instead (which `relevance` labels); with a query rewriter,
    `query` holds the texts searched and why the rewrite failed, if it did."""
    output_dir.mkdir(parents=True, exist_ok=True)
    metrics_path = output_dir / "metrics.json"
    metrics_path.write_text(json.dumps(summary, indent=2) + "\n")
    per_query_path = output_dir / per_query_file.NAME
    documents = dataset.documents
    with per_query_path.open("wb") as out:
        for position, (query, query_hits, scores) in enumerate(zip(dataset.queries, context.kept, per_query,
                                                                   strict=True)):
            retrieved = [_retrieved(chunks[hit.index], hit.score, documents) for hit in query_hits]
            record = {"id": query.id, "question": query.text, per_query_file.HASH: query.sha256(),
                      "references": [ref.to_dict() for ref in query.references],
                      "retrieved": retrieved, "metrics": scores}
            if query.lost:
                record["evidence_lost"] = list(query.lost)
            if rewrites is not None:
                made = rewrites[position]
                record["query"] = {"texts": list(made.texts), "error": made.error, "prompt_tokens": made.prompt_tokens,
                                   "completion_tokens": made.completion_tokens, "latency_ms": made.latency_ms}
            if context.widened:
                record["context"] = [_retrieved(context.chunks[hit.index], hit.score, documents)
                                     for hit in context.hits[position]]
            if generations is not None:
                made = generations[position]
                record.update(answer=made.answer, reference_answers=list(query.answers), generation=made.to_dict())
            if relevance is not None:
                record["relevance"] = relevance[position]
            if diagnostics is not None:
                record["judged"] = diagnostics[position]
            out.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY))
    config_path = output_dir / "config.yaml"
    config_path.write_text(config_yaml(config))
    return [metrics_path, per_query_file.finish(per_query_path), config_path]


REPAIRS_FILE = "spans_repaired.jsonl"


def write_repairs(output_dir: Path, dataset: Dataset) -> Path | None:
    """`spans_repaired.jsonl`: each reference span the loader moved to its text (where its file gives it, as given,
    as moved), None when none moved. Said once per process in one line with the count and the largest move: a
    repair changes the user's data, which the run's `dataset_spans_repaired` alone does not show."""
    if not dataset.repairs:
        return None
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / REPAIRS_FILE
    path.write_bytes(b"".join(orjson.dumps(moved.to_dict(), option=orjson.OPT_APPEND_NEWLINE)
                              for moved in dataset.repairs))
    if dataset.fingerprint not in _REPAIRS_SAID:
        _REPAIRS_SAID.add(dataset.fingerprint)
        largest = max(dataset.repairs, key=lambda moved: moved.distance)
        references = sum(len(query.references) for query in dataset.queries)
        log.warning("dataset.on_span_mismatch=repair moved %d of the %d reference spans of %s to their text, the "
                    "largest by %d character(s) (%s); each moved span is listed in %s", len(dataset.repairs),
                    references, dataset.name, largest.distance, largest.where, path)
    return path


_REPAIRS_SAID: set[str] = set()


def _retrieved(chunk: Chunk, score: float, documents: Mapping[str, Document]) -> dict:
    """A retrieved chunk in per_query.jsonl: its span and score, and the pages it lies on when its document has
    pages (a parsed PDF's, counted from 1)."""
    document = documents[chunk.doc_id]
    paged = isinstance(document, PagedDocument) and len(document.pages) > 1
    return {"doc_id": chunk.doc_id, "start": chunk.start, "end": chunk.end, "score": score,
            **({"pages": list(document.pages_of(chunk.start, chunk.end))} if paged else {})}


class _ConfigDumper(getattr(yaml, "CDumper", yaml.Dumper)):  # libyaml's, where PyYAML was built with it
    """OmegaConf's YAML dumper (`OmegaConf.to_yaml`) on libyaml's emitter: the same text in a third of the time."""

    def ignore_aliases(self, data: Any) -> bool:
        return True  # a value met twice is written twice, as OmegaConf's own containers are


_ConfigDumper.add_representer(str, get_omega_conf_dumper().str_representer)


def config_yaml(tree: Mapping[str, Any]) -> str:
    """`OmegaConf.to_yaml` of a resolved config tree (plain containers), as a job's config.yaml holds it."""
    return yaml.dump(tree, Dumper=_ConfigDumper, default_flow_style=False, allow_unicode=True, sort_keys=False)


LATENCY_FILE = "latency.json"  # each timing's milliseconds per question, for `gate`'s bootstrap of percentiles


def write_latency(output_dir: Path, samples: dict[str, np.ndarray]) -> Path:
    """latency.json: the milliseconds behind the run's latency percentiles (`scoring.latency_samples`)."""
    path = output_dir / LATENCY_FILE
    path.write_text(json.dumps({name: [float(ms) for ms in milliseconds] for name, milliseconds in samples.items()}))
    return path


def read_latency(path: Path) -> dict[str, np.ndarray]:
    """latency.json as `write_latency` wrote it."""
    return {name: np.asarray(values, dtype=np.float64) for name, values in json.loads(path.read_text()).items()}


def query_traces(dataset: Dataset, chunks: Sequence[Chunk], first: Sequence[Sequence[Hit]],
                 hits: Sequence[Sequence[Hit]], context: Context, generations: Sequence[Generation],
                 search_ms: np.ndarray, rerank_ms: np.ndarray, pipeline: Pipeline,
                 judgements: Sequence[Judgement] | None = None, timed: Sequence[int] | None = None) -> list[dict]:
    """What each question of the latency sample went through (the questions whose every stage was timed, at
    positions `timed`; default `latency_sample`), for the tracker's traces: retrieval, rerank and generation
    with their inputs, outputs and milliseconds (generation's passages are those `context` passed on), and with
    `judgements` the judge's verdict on each claim."""
    def documents(query_hits: Sequence[Hit], pieces: Sequence[Chunk] = chunks) -> list[dict]:
        return [{**pieces[hit.index].span.to_dict(), "text": pieces[hit.index].text, "score": hit.score}
                for hit in query_hits[: pipeline.plan.k]]

    traces = []
    for row, position in enumerate(latency_sample(len(dataset.queries)) if timed is None else timed):
        query, made = dataset.queries[position], generations[position]
        stages = [{"name": "retrieval", "span_type": "RETRIEVER", "inputs": {"question": query.text},
                   "outputs": documents(first[position]), "ms": float(search_ms[row])}]
        if len(rerank_ms):
            stages.append({"name": "rerank", "span_type": "RERANKER", "inputs": {"question": query.text},
                           "outputs": documents(hits[position]), "ms": float(rerank_ms[row])})
        if context.widened or context.kept[position] != list(hits[position][: pipeline.plan.k]):
            stages.append({"name": "context", "span_type": "RETRIEVER", "inputs": {"question": query.text},
                           "outputs": documents(context.hits[position], context.chunks), "ms": 0.0})
        passages = tuple(context.chunks[hit.index].text for hit in context.hits[position])
        stages.append({"name": "generation", "span_type": "LLM",
                       "inputs": {"messages": list(pipeline.prompt.render(query.text, passages))},
                       "outputs": {"answer": made.answer, "prompt_tokens": made.prompt_tokens,
                                   "completion_tokens": made.completion_tokens},
                       "ms": made.latency_ms})
        trace = {"id": query.id, "question": query.text, "answer": made.answer, "error": made.error,
                 "spans": stages}
        if judgements is not None and judgements[position].claims:
            trace["judge"] = judge_source(pipeline)
            judgement = judgements[position]
            trace["feedback"] = claim_feedback(query.id, [claim.text for claim in judgement.claims],
                                               [[verdict.score for verdict in row] for row in judgement.support],
                                               passages, pipeline.judge.component.threshold)
        traces.append(trace)
    return traces

