"""`ragsweep generate`: a question set with exact reference spans, made from a user's own documents.

Passages are sampled across each document; a generator drafts a question, excerpts copied from the
passage and a short answer; each excerpt is located in the document as a span (the span's text is
the document's, never the model's copy); then the filters screen the draft in order and the first
that fails it is recorded as the reason it was dropped. Drafts and verdicts are cached like every
stage, so a killed run resumes where it stopped and a rerun with other filter settings drafts nothing.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig
from tqdm.auto import tqdm

from ragsweep.cache import StageCache, fingerprint
from ragsweep.data.locate import Located, locate
from ragsweep.embedding.cached import cached_embedder
from ragsweep.generation.base import Request
from ragsweep.judging.base import Pair
from ragsweep.judging.claims import split_claims
from ragsweep.judging.llm import SEPARATOR  # between the outputs of one draft's calls, as in the llm judge's raw
from ragsweep.questions import filters
from ragsweep.questions.drafts import (
    DIFFICULTIES, REASK, TYPES, Draft, check_mix, load_draft_prompt, next_wanted, parse_draft, schema_for,
)
from ragsweep.questions.report import Report
from ragsweep.questions.sampling import attempt_order, quotas
from ragsweep.runner.build import (
    GENERATOR_SETTINGS, Built, ConfigError, group_config, instantiate_stage, judge_stage,
)
from ragsweep.runner.judging import cached_verdicts
from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Chunk, Dataset, Document, Span

log = logging.getLogger(__name__)

FILTERS = {  # filters.<key> -> the check it sets, in the order drafts are screened
    "min_location_similarity": "located", "min_excerpt_relevance": "excerpt_relevance",
    "max_duplicate_similarity": "duplicate", "round_trip_k": "round_trip", "min_answer_support": "answerability",
}
UNSUPPORTED_ANSWER = ("drop_question", "drop_answer")  # what answerability drops: the draft, or only its answer
SETTINGS = ("seed", "questions_per_document", "attempts_per_question", "retries", "constrain_excerpts", "prompt", "types",
            "difficulties", "filters", "paths", "hydra")
GROUPS = ("generator", "embedder", "store", "passages", "chunker", "retriever", "judge", "cache",
          "dataset")  # dataset: `--dataset NAME` reads that option's documents


@dataclass(frozen=True)
class Attempt:
    """One passage tried, with the question type and difficulty asked for."""

    passage: Chunk
    type: str
    difficulty: str
    schema: dict  # the JSON schema sent with the request (part of the draft's cache key)


@dataclass
class Screened:
    """A draft's fate: kept with its spans, or dropped by `reason` (a filter or a failure) with `detail`."""

    attempt: Attempt
    draft: Draft | None = None
    spans: list[tuple[Span, Located]] = field(default_factory=list)  # excerpts located, without repeats
    reason: str | None = None
    detail: str = ""
    answer_dropped: bool = False  # its answer failed answerability under filters.unsupported_answer=drop_answer


class QuestionSetWriter:
    """Builds the stages of a `generate` config and writes the question set; settings are checked first."""

    def __init__(self, cfg: DictConfig, documents: dict[str, Document]) -> None:
        self.documents = documents
        self.settings = check_settings(cfg)
        cache_cfg = group_config(cfg, "cache")
        self.cache = StageCache.from_settings(cache_cfg)
        stages: dict[str, Built] = {"cache": Built(self.cache, {})}
        self.generator = instantiate_stage(cfg, "generator", stages, self.cache, runner_keys=GENERATOR_SETTINGS)
        if not getattr(self.generator.component, "enabled", True) or not hasattr(self.generator.component, "max_tokens"):
            raise ConfigError(f"generator._target_={cfg.generator.get('_target_')}: questions need an LLM generator; "
                              "use generator=llama_cpp or generator=openai")
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
        for component in (self.generator.component, self.embedder, self.judge.component if self.judge else None):
            if callable(getattr(component, "preflight", None)):
                try:
                    component.preflight()
                except (OSError, ValueError, RuntimeError) as error:
                    raise ConfigError(str(error).splitlines()[0]) from None

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
        report = Report(wanted, settings)
        kept: list[Screened] = []
        vectors: list[np.ndarray] = []
        for doc_id in tqdm(sorted(documents), desc="documents", unit="doc"):
            order = attempt_order(len(passages[doc_id]), wanted[doc_id], settings["seed"], doc_id)
            limit = min(len(order), settings["attempts_per_question"] * wanted[doc_id])
            tried = kept_here = 0
            while kept_here < wanted[doc_id] and tried < limit:
                batch = order[tried:tried + min(wanted[doc_id] - kept_here, limit - tried)]
                tried += len(batch)
                attempts = self._targets([passages[doc_id][i] for i in batch], report.achieved)
                for attempt, (draft, why) in zip(attempts, self._drafts(attempts, report), strict=True):
                    screened = self._screen(Screened(attempt, draft, reason=None if draft else why[0], detail=why[1]),
                                            vectors, chunks)
                    report.add(screened, _TOKENIZER.count)
                    if screened.reason is None:
                        kept.append(screened)
                        kept_here += 1
        report.seconds = time.perf_counter() - started
        records = [_record(number, s) for number, s in enumerate(kept, start=1)]
        write_dataset(out, documents, records, report)
        return report.to_dict(records)

    def _targets(self, passages: Sequence[Chunk], achieved: dict[str, Counter]) -> list[Attempt]:
        """Each passage with the type and difficulty the kept questions are furthest short of (counting
        the ones asked for just before as if kept)."""
        pending = {key: Counter(counts) for key, counts in achieved.items()}
        attempts = []
        for passage in passages:
            kind = next_wanted(self.settings["types"], pending["type"])
            level = next_wanted(self.settings["difficulties"], pending["difficulty"])
            pending["type"][kind] += 1
            pending["difficulty"][level] += 1
            attempts.append(Attempt(passage, kind, level, schema_for(passage.text, self.settings["constrain_excerpts"])))
        return attempts

    def _drafts(self, attempts: Sequence[Attempt], report: Report) -> list[tuple[Draft | None, tuple[str, str]]]:
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
        results = []
        for attempt in attempts:
            messages = self.prompt.render(attempt.passage.text, attempt.type, attempt.difficulty)
            outputs, error = [], ""
            for _ in range(self.settings["retries"] + 1):
                request = Request(attempt.passage.text, (), messages, {"type": "json_object", "schema": attempt.schema})
                made = self.generator.component.generate([request])[0]
                if made.error is not None or made.answer is None:
                    error = made.error or "the generator returned no answer"
                    outputs.append(error)
                    break
                outputs.append(made.answer)
                if parse_draft(made.answer, attempt.type, attempt.difficulty)[0] is not None:
                    break
                messages = (*messages, {"role": "assistant", "content": made.answer}, {"role": "user", "content": REASK})
            results.append((SEPARATOR.join(outputs), error))
        return results

    def _screen(self, screened: Screened, vectors: list[np.ndarray], chunks: Sequence[Chunk]) -> Screened:
        """Run the filters in order; the first that fails sets `reason` and `detail`."""
        if screened.reason is not None:
            return screened
        draft, passage, limits = screened.draft, screened.attempt.passage, self.settings["filters"]
        text = self.documents[passage.doc_id].text
        for excerpt in draft.excerpts:
            found = locate(text, excerpt, limits["min_location_similarity"], passage.start, passage.end)
            span = Span(passage.doc_id, found.start, found.end) if found else None
            if span is not None and all(span != known for known, _ in screened.spans):
                screened.spans.append((span, found))
        if not screened.spans:
            return _drop(screened, "located", f"no excerpt found in the passage at similarity >= "
                                              f"{limits['min_location_similarity']}: {draft.excerpts[0][:120]!r}")
        question = self.embedder.encode([draft.question], role="query")[0]
        excerpts = self.embedder.encode([text[s.start:s.end] for s, _ in screened.spans], role="passage")
        relevance = filters.excerpt_relevance(question, excerpts)
        if relevance < limits["min_excerpt_relevance"]:
            return _drop(screened, "excerpt_relevance", f"cosine {relevance:.2f} < {limits['min_excerpt_relevance']}")
        similarity, position = filters.nearest_kept(question, np.array(vectors).reshape(-1, len(question)))
        if similarity > limits["max_duplicate_similarity"]:
            return _drop(screened, "duplicate", f"cosine {similarity:.2f} to kept question {position + 1}")
        if limits["round_trip_k"]:
            hits = self.retriever.search([draft.question], limits["round_trip_k"])[0]
            if filters.round_trip_rank([chunks[hit.index].span for hit in hits], [s for s, _ in screened.spans]) is None:
                return _drop(screened, "round_trip", f"no excerpt in the top {limits['round_trip_k']} of the "
                                                     "reference retriever")
        if self.judge is not None and limits["min_answer_support"] > 0:
            claims = [claim.text for claim in split_claims(draft.answer)]
            passages = [text[s.start:s.end] for s, _ in screened.spans]
            pairs = [Pair("support", claim, passage) for claim in claims for passage in passages]
            verdicts = cached_verdicts(self.judge, self.cache, pairs)
            failed = [v for v in verdicts if not v.ok]
            if failed:
                return _drop(screened, "judge_failed", f"{failed[0].status}: {failed[0].raw[-120:]!r}")
            scores = [[verdicts[c * len(passages) + p].score for p in range(len(passages))] for c in range(len(claims))]
            share = filters.supported_share(scores, self.judge_threshold)
            if share < limits["min_answer_support"]:
                if limits["unsupported_answer"] == "drop_question":
                    return _drop(screened, "answerability", f"{share:.0%} of the answer's claims supported by its excerpts")
                screened.answer_dropped = True  # kept for its spans; no reference answer to score answers against
        vectors.append(question)
        return screened


_TOKENIZER = Tokenizer("cl100k_base")  # excerpt lengths in the report


def _drop(screened: Screened, reason: str, detail: str) -> Screened:
    screened.reason, screened.detail = reason, detail
    return screened


def _record(number: int, screened: Screened) -> dict[str, Any]:
    """A queries.jsonl line (the native format, plus how the question was made)."""
    draft = screened.draft
    return {"id": f"q{number:04d}", "question": draft.question,
            "references": [{**span.to_dict(), "content": None} for span, _ in screened.spans],
            "answers": [] if screened.answer_dropped else [draft.answer], "corpus": screened.attempt.passage.doc_id, "type": draft.type,
            "difficulty": draft.difficulty, "excerpt_similarity": [found.similarity for _, found in screened.spans]}


def write_dataset(out: Path, documents: dict[str, Document], records: list[dict[str, Any]], report: Report) -> None:
    """`out/documents/<id>.txt`, `queries.jsonl` (each span's `content` is the document's text there) and the
    reports, each written to a temporary file and renamed, so a killed run never leaves a half file."""
    (out / "documents").mkdir(parents=True, exist_ok=True)
    for doc_id, doc in documents.items():
        _replace(out / "documents" / f"{doc_id}.txt", doc.text)
    for record in records:
        for reference in record["references"]:
            reference["content"] = documents[reference["doc_id"]].text[reference["start"]:reference["end"]]
    _replace(out / "queries.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    _replace(out / "generation_report.json", json.dumps(report.to_dict(records), indent=2, ensure_ascii=False) + "\n")
    _replace(out / "generation_report.md", report.markdown(records))


def _replace(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w", encoding="utf-8", newline="") as handle:  # offsets: no newline translation
        handle.write(text)
    temporary.replace(path)


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

