"""`ragsweep generate`: a question set with exact reference spans, made from a user's own documents.

Passages are sampled across each document; a generator drafts a question, excerpts copied from the
passage and a short answer; the draft is screened (`questions.screening`) and the set written
(`questions.writing`). This module builds the stages a `generate` config names and wires them to those
steps. Drafts and verdicts are cached like every stage, so a killed run resumes where it stopped and a
rerun with other filter settings drafts nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig
from tqdm.auto import tqdm

from ragsweep.cache import StageCache
from ragsweep.identity import fingerprint
from ragsweep.embedding.cached import cached_embedder
from ragsweep.generation.base import JSON, Request, check_gives
from ragsweep.generation.reask import SEPARATOR, ask_until_parsed
from ragsweep.questions.drafts import (DIFFICULTIES, REASK, TYPES, Draft, check_mix, load_draft_prompt,
                                      parse_draft)
from ragsweep.questions.report import QuestionSetAudit
from ragsweep.questions.sampling import attempt_order, quotas
from ragsweep.questions.screening import (FILTERS, UNSUPPORTED_ANSWER, Attempt, DraftScreen, Screened,
                                         attempts_for)
from ragsweep.questions.writing import record, write_dataset, write_reports
from ragsweep.runner.build import Built, ConfigError, group_config, instantiate_stage, judge_stage
from ragsweep.runner.errors import in_group
from ragsweep.runner.verdicts import cached_verdicts
from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Dataset, Document

log = logging.getLogger(__name__)

SETTINGS = ("seed", "questions_per_document", "attempts_per_question", "retries", "constrain_excerpts", "prompt", "types",
            "difficulties", "filters", "paths", "hydra")
GROUPS = ("generator", "embedder", "store", "passages", "chunker", "retriever", "judge", "cache",
          "dataset", "parser")  # dataset: `--dataset NAME` reads that option's documents (parser: files, by it)


class QuestionSetWriter:
    """Builds the stages of a `generate` config and writes the question set; settings are checked first."""

    def __init__(self, cfg: DictConfig, documents: dict[str, Document]) -> None:
        self.documents = documents
        self.settings = check_settings(cfg)
        self.max_error_rate = float(cfg.generator.get("max_error_rate", 0.05))
        cache_cfg = group_config(cfg, "cache")
        self.cache = StageCache.from_settings(cache_cfg)
        stages: dict[str, Built] = {"cache": Built(self.cache, {})}
        self.generator = instantiate_stage(cfg, "generator", stages, self.cache)
        try:  # drafts are JSON: a model that gives none is refused before any call
            check_gives(self.generator.component, JSON, "`ragsweep generate`")
        except ValueError as error:
            raise ConfigError(str(error)) from None
        embedder = instantiate_stage(cfg, "embedder", {}, self.cache)
        embedder.component = cached_embedder(embedder.component, self.cache, embedder.signature)
        self.embedder = embedder.component
        stages.update(embedder=embedder, store=instantiate_stage(cfg, "store", {}, self.cache))
        self.passage_chunker = instantiate_stage(cfg, "passages", {}, self.cache).component
        self.chunker = instantiate_stage(cfg, "chunker", stages, self.cache).component
        self.retriever = instantiate_stage(cfg, "retriever", stages, self.cache).component
        corpus = Built(Dataset("generate", documents, []), {})
        self.judge = judge_stage(cfg, {"dataset": corpus}, self.cache)
        self.judge_threshold = float(getattr(self.judge.component, "threshold", 0.5)) if self.judge else None
        self.prompt = load_draft_prompt(str(cfg.prompt))
        asking = "judge" if self.judge and "generator" in cfg.judge else None  # the llm judge's own model
        for component, group in ((self.generator.component, None), (self.embedder, None),
                                 (self.judge.component if self.judge else None, asking)):
            if callable(getattr(component, "preflight", None)):
                try:
                    component.preflight()
                except (OSError, ValueError, RuntimeError) as error:
                    line = str(error).splitlines()[0]
                    raise ConfigError(in_group(line, group) if group else line) from None

    def write(self, out: Path) -> dict[str, Any]:
        """Draft, screen and write `out/documents`, `queries.jsonl` and the reports; returns the report."""
        started = time.perf_counter()
        settings, documents = self.settings, self.documents
        passages = {doc_id: self.passage_chunker.split(doc) for doc_id, doc in documents.items()}
        wanted = quotas({doc_id: len(doc.text) for doc_id, doc in documents.items()}, settings["questions_per_document"])
        chunks = []  # the round trip's index, when it is on
        if settings["filters"]["round_trip_k"]:
            chunks = [chunk for doc_id in sorted(documents) for chunk in self.chunker.split(documents[doc_id])]
            self.retriever.index(chunks)
        verdicts = partial(cached_verdicts, self.judge, self.cache) if self.judge is not None else None
        screen = DraftScreen(documents, settings["filters"], self.embedder, self.retriever, chunks, verdicts,
                             self.judge_threshold)
        report = QuestionSetAudit(wanted, settings)
        kept: list[Screened] = []
        for doc_id in tqdm(sorted(documents), desc="documents", unit="doc"):
            order = attempt_order(len(passages[doc_id]), wanted[doc_id], settings["seed"], doc_id)
            limit = min(len(order), settings["attempts_per_question"] * wanted[doc_id])
            tried = kept_here = 0
            while kept_here < wanted[doc_id] and tried < limit:
                batch = order[tried:tried + min(wanted[doc_id] - kept_here, limit - tried)]
                tried += len(batch)
                attempts = attempts_for([passages[doc_id][i] for i in batch], report.achieved, settings)
                for attempt, (draft, why) in zip(attempts, self._drafts(attempts, report), strict=True):
                    screened = screen(Screened(attempt, draft, reason=None if draft else why[0],
                                               detail=why[1]))
                    report.add(screened, _TOKENIZER.count)
                    if screened.reason is None:
                        kept.append(screened)
                        kept_here += 1
        report.seconds = time.perf_counter() - started
        records = [record(number, s) for number, s in enumerate(kept, start=1)]
        written = report.to_dict(records)
        if records and not too_many_failed(written, self.max_error_rate):
            write_dataset(out, documents, records, report)
        else:  # a failed run: why, and no dataset that would pass for one
            write_reports(out, records, report)
        return written

    def _drafts(self, attempts: Sequence[Attempt],
                report: QuestionSetAudit) -> list[tuple[Draft | None, tuple[str, str]]]:
        """The draft of each attempt (cached per generator, prompt and passage; failed calls are not), or
        None with (reason, detail): `generation_failed` or `unparseable`."""
        generator = self.generator
        keys = [fingerprint("question_draft", generator.signature, self.prompt.system, self.prompt.user,
                            a.schema, a.passage.text, a.type, a.difficulty, self.settings["retries"])
                for a in attempts]

        def compute(positions: list[int]) -> list[dict[str, np.ndarray]]:
            return [{"raw": np.array(raw), "error": np.array(error)} for raw, error in self._ask([attempts[i] for i in positions])]

        before = self.cache.misses["question_drafts"]
        entries = self.cache.get_or_compute_each("question_drafts", keys, compute, batch=1, progress=False,
                                                 storable=lambda entry: not str(entry["error"]))
        report.drafts["generated"] += self.cache.misses["question_drafts"] - before
        report.drafts["from_cache"] += len(attempts) - (self.cache.misses["question_drafts"] - before)
        made = []
        for attempt, entry in zip(attempts, entries, strict=True):
            raw, error = str(entry["raw"]), str(entry["error"])
            if error:
                made.append((None, ("generation_failed", error)))
                continue
            draft, reason = parse_draft(raw.rsplit(SEPARATOR, 1)[-1], attempt.type, attempt.difficulty)
            made.append((draft, ("unparseable", f"{reason}: {raw[-300:]!r}")) if draft is None else (draft, ("", reason)))
        return made

    def _ask(self, attempts: Sequence[Attempt]) -> list[tuple[str, str]]:
        """(every raw output, error or "") per attempt; an unparseable output is re-asked `retries` times."""
        def request(i: int, messages: tuple[dict[str, str], ...]) -> Request:
            response_format = {"type": "json_object", "schema": attempts[i].schema}
            return Request(attempts[i].passage.text, (), messages, response_format)

        conversations = [self.prompt.render(a.passage.text, a.type, a.difficulty) for a in attempts]
        replies = ask_until_parsed(
            self.generator.component, conversations, self.settings["retries"], request=request,
            read=lambda i, text: parse_draft(text, attempts[i].type, attempts[i].difficulty)[0],
            usable=lambda draft: draft is not None, correction=lambda i: REASK)
        return [(reply.raw, reply.error or "") for reply in replies]


_TOKENIZER = Tokenizer("cl100k_base")  # excerpt lengths in the report


def too_many_failed(report: dict[str, Any], max_error_rate: float) -> bool:
    """Whether more drafts failed to generate than `generator.max_error_rate` allows: the run failed."""
    failed, tried = report["dropped"]["generation_failed"], report["passages_tried"]
    return bool(tried) and failed / tried > max_error_rate


def check_settings(cfg: DictConfig) -> dict[str, Any]:
    """The generate config's own settings, checked before any work; errors name the key and the fix."""
    for key in cfg:
        if key not in (*SETTINGS, *GROUPS):
            raise ConfigError(f"{key}: `ragsweep generate` reads no such key; its keys are "
                              f"{', '.join(k for k in (*SETTINGS, *GROUPS) if k != 'hydra')}")
    settings = {}
    for key, low in (("seed", 0), ("questions_per_document", 1), ("attempts_per_question", 1), ("retries", 0)):
        value = cfg.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(f"{key} must be an integer >= {low}, got {value!r}")
        settings[key] = value
    try:
        settings["types"] = check_mix(group_config(cfg, "types"), TYPES, "types")
        settings["difficulties"] = check_mix(group_config(cfg, "difficulties"), DIFFICULTIES, "difficulties")
    except ValueError as error:
        raise ConfigError(str(error)) from None
    limits = group_config(cfg, "filters")
    if limits.get("unsupported_answer") not in UNSUPPORTED_ANSWER:
        raise ConfigError(f"filters.unsupported_answer must be {' or '.join(UNSUPPORTED_ANSWER)}, "
                          f"got {limits.get('unsupported_answer')!r}")
    for key in limits:
        if key not in (*FILTERS, "unsupported_answer"):
            raise ConfigError(f"filters.{key}: no such filter setting; they are {', '.join(f'filters.{k}' for k in FILTERS)}")
    for key in FILTERS:
        value = limits.get(key)
        if key == "round_trip_k":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"filters.round_trip_k must be an integer >= 0 (0 turns the round trip off), got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1 or \
                (key == "min_location_similarity" and value == 0):
            raise ConfigError(f"filters.{key} must be a number in {'(0' if key == 'min_location_similarity' else '[0'}, 1], "
                              f"got {value!r}")
    settings["filters"] = limits
    if not isinstance(cfg.get("constrain_excerpts"), bool):
        raise ConfigError(f"constrain_excerpts must be true or false, got {cfg.get('constrain_excerpts')!r}")
    settings["constrain_excerpts"] = cfg.constrain_excerpts
    return settings

