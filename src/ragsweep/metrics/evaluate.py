"""Scores one run, query by query: token, chunk and ranking metrics from span overlap alone."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ragsweep.embedding.base import Embedder
from ragsweep.memo import remember
from ragsweep.metrics.answers import (
    answer_correctness,
    best_over_references,
    cosine_similarity,
    exact_match,
    strip_citations,
    token_f1,
)
from ragsweep.metrics import registry
from ragsweep.metrics.chunk import chunk_scores
from ragsweep.metrics.compat import (
    compat_precision_omega,
    compat_token_scores,
    relocate_like_chunking_evaluation,
)
from ragsweep.metrics.intervals import IntervalIndex, intersection_length, union_length
from ragsweep.metrics.ranking import RANKING_METRICS
from ragsweep.metrics.token import precision_omega, token_scores
from ragsweep.metrics.units import UNITS, UnitLine
from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Chunk, Dataset, Hit, Span

METRIC_KEYS = registry.names(stage="retrieval", per_question=True)  # what `SpanEvaluator.score` returns per question
MODES = ("standard", "chroma_compat")
GAINS = ("binary", "overlap")


class SpanEvaluator:
    """Scores retrieved chunks against reference spans.

    Token metrics follow `mode` (`standard`: true positions, unions, `unit` tokens or chars;
    `chroma_compat`: chunking_evaluation's character semantics, see `compat.py`). Chunk-level and
    ranking metrics always use true positions: a chunk is relevant when it shares a character with
    a reference. With `gain: overlap`, nDCG grades a relevant chunk by the share of the query's
    reference units it contains.

    Args:
        unit: `tokens` or `chars`, for token metrics in standard mode.
        mode: `standard` or `chroma_compat` (which requires unit `chars`).
        gain: `binary` or `overlap`, for nDCG.
        encoding: tiktoken encoding that defines a token.
        answer_embedder: Embedder for `answer_similarity` (runs with a generator and reference answers).
        correctness_weight: w in answer_correctness = w · answer_f1 + (1 − w) · answer_similarity.
    """

    def __init__(
        self, unit: str = "tokens", mode: str = "standard", gain: str = "binary", encoding: str = "cl100k_base",
        answer_embedder: Embedder | None = None, correctness_weight: float = 0.75,
    ) -> None:
        if not 0 <= correctness_weight <= 1:
            raise ValueError(f"metrics.correctness_weight must be between 0 and 1, got {correctness_weight}")
        self.answer_embedder, self.correctness_weight = answer_embedder, correctness_weight
        if unit not in UNITS:
            raise ValueError(f"metrics.unit must be one of {UNITS}, got {unit!r}")
        if mode not in MODES:
            raise ValueError(f"metrics.mode must be one of {MODES}, got {mode!r}")
        if gain not in GAINS:
            raise ValueError(f"metrics.gain must be one of {GAINS}, got {gain!r}")
        if mode == "chroma_compat" and unit != "chars":
            raise ValueError(
                "metrics.mode=chroma_compat counts characters; use metrics=chroma_compat or set metrics.unit=chars"
            )
        self.unit, self.mode, self.gain = unit, mode, gain
        self.tokenizer = Tokenizer(encoding)

    def score(self, dataset: Dataset, chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]], k: int,
              passages: Sequence[Sequence[Span]] | None = None) -> list[dict]:
        """One `{metric: value}` per query, in `dataset.queries` order, over each query's top k hits; with
        `passages` (each query's spans passed on in place of its chunks, e.g. widened), the token metrics and the
        context's size are theirs, the chunk and ranking metrics still the hits'."""
        if k <= 0:
            raise ValueError(f"k must be > 0, got {k}")
        facts = self._facts(dataset, chunks)
        scored = []
        for position, (query, query_hits) in enumerate(zip(dataset.queries, hits, strict=True)):
            top = tuple(hit.index for hit in query_hits[:k])
            passed = None if passages is None else tuple(passages[position])
            # stores and rerankers often return the same top k: a ranked list is scored once per chunking
            key = (query.references, query.lost, top, k, passed)
            scores = facts.scored.get(key)
            if scores is None:
                query_facts = self._query_facts(facts, query.references, query.lost)
                scores = self._score_query(facts, query_facts, list(top), k, self._passed(dataset, facts, passed))
                if len(facts.scored) < SCORED_LIMIT:
                    facts.scored[key] = scores
            scored.append({**scores, "evidence_located": query.evidence_located})
        return scored

    def score_answers(self, answers: Sequence[str | None], references: Sequence[Sequence[str]]) -> list[dict]:
        """Per question, its answer metrics: none when it has no answer (a failed generation, counted
        apart) or no reference answers, so neither becomes a 0 that looks like a wrong answer."""
        scored: list[dict] = []
        pairs = [(i, strip_citations(answer), refs) for i, (answer, refs)
                 in enumerate(zip(answers, references, strict=True)) if answer is not None and refs]
        similarity = self._similarities(pairs)
        scores_of = {}
        for i, answer, refs in pairs:
            f1 = best_over_references(token_f1, answer, refs)
            scores = {"answer_exact_match": best_over_references(exact_match, answer, refs), "answer_f1": f1}
            if i in similarity:
                scores["answer_similarity"] = similarity[i]
                scores["answer_correctness"] = answer_correctness(f1, similarity[i], self.correctness_weight)
            scores_of[i] = scores
        for i in range(len(answers)):
            scored.append(scores_of.get(i, {}))
        return scored

    def _similarities(self, pairs: list[tuple[int, str, Sequence[str]]]) -> dict[int, float]:
        if self.answer_embedder is None or not pairs:
            return {}
        texts = [answer for _, answer, _ in pairs] + [ref for _, _, refs in pairs for ref in refs]
        vectors = self.answer_embedder.encode(texts, role="passage")
        similarity, row = {}, len(pairs)
        for position, (i, _, refs) in enumerate(pairs):
            similarity[i] = cosine_similarity(vectors[position], vectors[row : row + len(refs)])
            row += len(refs)
        return similarity

    def _passed(self, dataset: Dataset, facts: _ChunkingFacts, passed: Sequence[Span] | None) -> np.ndarray | None:
        """The intervals of the spans passed on, on the token metrics' line (None: the chunks were passed on)."""
        if passed is None:
            return None
        if facts.located is None:
            return facts.units.intervals(passed)
        return facts.chars.intervals([_relocated(dataset, span) for span in passed])

    def _score_query(self, facts: _ChunkingFacts, query: _QueryFacts, top: list[int], k: int,
                     passed: np.ndarray | None = None) -> dict[str, float]:
        """Token metrics over what was passed on (`passed`, else the chunks `top`), chunk and ranking metrics over
        `top`, and the context's size: passages and their summed length in the token metrics' unit."""
        if facts.located is None:
            context = facts.chunk_units[top] if passed is None else passed
            scores = token_scores(context, query.reference_units)
        else:
            context = facts.located[top] if passed is None else passed
            scores = compat_token_scores(context, query.reference_chars)
        scores["precision_omega"] = query.omega
        scores.update(chunk_scores(facts.chunk_chars[top], query.reference_chars))
        gains = np.array([query.gains.get(index, 0.0) for index in top])
        ideal = np.fromiter(query.gains.values(), dtype=np.float64, count=len(query.gains))
        for name, metric in RANKING_METRICS.items():
            scores[name] = metric(gains, ideal, k)
        scores["context_passages"] = float(len(context))
        scores["context_size"] = float((context[:, 1] - context[:, 0]).sum())
        return scores

    def _facts(self, dataset: Dataset, chunks: Sequence[Chunk]) -> _ChunkingFacts:
        """What depends on the chunking but not on retrieval, computed once per process per chunking of these
        documents, whatever the questions (a race's rounds score growing subsets). Jobs that share a chunking
        share its chunk list, so that very list finds its facts without hashing its spans."""
        settings = (dataset.documents_fingerprint, self.unit, self.mode, self.gain, self.tokenizer.encoding)
        for known_chunks, known_settings, facts in _FACTS_OF_LISTS:
            if known_chunks is chunks and known_settings == settings:
                return facts
        doc_ids = [chunk.doc_id for chunk in chunks]
        bounds = np.fromiter((end for chunk in chunks for end in (chunk.start, chunk.end)), dtype=np.int64,
                             count=2 * len(chunks)).reshape(-1, 2)
        digest = hashlib.sha256("\0".join(doc_ids).encode() + bounds.tobytes()).hexdigest()  # no two chunkings share it
        facts = remember(_FACTS, (*settings, digest), lambda: self._compute_facts(dataset, chunks, doc_ids, bounds),
                         limit=8)
        _FACTS_OF_LISTS.append((chunks, settings, facts))  # holding the list, so its identity is not reused
        del _FACTS_OF_LISTS[:-8]
        return facts

    def _compute_facts(self, dataset: Dataset, chunks: Sequence[Chunk], doc_ids: list[str],
                       bounds: np.ndarray) -> _ChunkingFacts:
        """Chunks are mapped to tokens only where a query or a ranked list needs them."""
        chars = _unit_line(dataset, "chars", self.tokenizer)
        units = _unit_line(dataset, "tokens", self.tokenizer) if self.unit == "tokens" else chars
        chunk_chars = chars.intervals_of(doc_ids, bounds)
        chunk_units = _ChunkUnits(units, doc_ids, bounds, chunk_chars if units is chars else None)
        located = None
        if self.mode == "chroma_compat":
            located = chars.intervals([_relocated(dataset, chunk) for chunk in chunks])
        return _ChunkingFacts(chars, units, chunk_chars, chunk_units, located, IntervalIndex(chunk_chars),
                              IntervalIndex(located) if located is not None else None)

    def _query_facts(self, facts: _ChunkingFacts, references: tuple[Span, ...], lost: tuple[str, ...] = ()
                     ) -> _QueryFacts:
        """A question's references against the chunking, once per references: they are compared only with the
        chunks near them (`IntervalIndex`), so the work grows with chunks plus references, never with chunks
        times queries. Evidence the documents lost lies past every document (`UnitLine.beyond`): no chunk meets
        it, and it counts in what the question asks for."""
        known = facts.queries.get((references, lost))
        if known is not None:
            return known
        chars, units, chunk_units = facts.chars, facts.units, facts.chunk_units
        reference_chars = np.concatenate([chars.intervals(references), chars.beyond(lost)])
        reference_units = np.concatenate([units.intervals(references), units.beyond(lost)])
        if facts.near_located is None:  # the chunks sharing a unit with a reference share a character with it widened
            candidates = facts.near_chars.meeting(chars.intervals(units.widened(references)))
            omega = precision_omega(chunk_units[candidates], reference_units)
        else:
            candidates = facts.near_located.meeting(reference_chars, touching=True)
            omega = compat_precision_omega(facts.located[candidates], reference_chars)
        gains = self._gains(facts.near_chars.meeting(reference_chars), chunk_units, reference_units)
        found = facts.queries[(references, lost)] = _QueryFacts(reference_chars, reference_units, omega, gains)
        return found

    def _gains(self, relevant: np.ndarray, chunk_units: _ChunkUnits, reference_units: np.ndarray) -> dict[int, float]:
        """Gain of each chunk that shares a character with a reference (every other chunk's is 0)."""
        if self.gain == "binary":
            return dict.fromkeys(relevant.tolist(), 1.0)
        reference_size = union_length(reference_units)
        relevant_units = chunk_units[relevant]
        return {i: intersection_length(relevant_units[row : row + 1], reference_units) / reference_size
                for row, i in enumerate(relevant.tolist())}


class _ChunkUnits:
    """A chunking's chunks on the metric unit line, each mapped on first use: a query's ranked chunks and the
    chunks near its references are a small part of a large corpus, whose other documents stay untokenised."""

    def __init__(self, line: UnitLine, doc_ids: list[str], bounds: np.ndarray, known: np.ndarray | None) -> None:
        self.line, self.doc_ids, self.bounds = line, doc_ids, bounds
        self.values = known if known is not None else np.zeros_like(bounds)
        self.known = np.full(len(bounds), known is not None)

    def __getitem__(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        missing = np.unique(rows[~self.known[rows]])
        if len(missing):
            self.values[missing] = self.line.intervals_of([self.doc_ids[i] for i in missing.tolist()],
                                                          self.bounds[missing])
            self.known[missing] = True
        return self.values[rows]


SCORED_LIMIT = 200_000  # (query, top k, k) results kept per chunking: ~14 floats each
_UNIT_LINES: dict[tuple[str, str, str], UnitLine] = {}
_FACTS: dict[tuple, _ChunkingFacts] = {}
_FACTS_OF_LISTS: list[tuple[Sequence[Chunk], tuple, _ChunkingFacts]] = []  # (chunk list, settings, facts)


def _unit_line(dataset: Dataset, unit: str, tokenizer: Tokenizer) -> UnitLine:
    """One UnitLine per dataset, unit and encoding per process: tokenising the corpora is the slow part
    of scoring, and a sweep scores the same dataset once per configuration."""
    key = (dataset.documents_fingerprint, unit, tokenizer.encoding)
    return remember(_UNIT_LINES, key, lambda: UnitLine(dataset.documents, unit, tokenizer), limit=4)


@dataclass
class _QueryFacts:
    """A question's reference intervals (characters, metric units), precision-Ω and the gains of the chunks
    sharing a character with a reference."""

    reference_chars: np.ndarray
    reference_units: np.ndarray
    omega: float
    gains: dict[int, float]


@dataclass
class _ChunkingFacts:
    """Per chunking of one set of documents: chunk positions (true, in metric units, relocated for compat),
    the unit lines and interval indexes they were found with, and each question's facts by its references."""

    chars: UnitLine
    units: UnitLine
    chunk_chars: np.ndarray
    chunk_units: _ChunkUnits
    located: np.ndarray | None
    near_chars: IntervalIndex
    near_located: IntervalIndex | None
    queries: dict[tuple[tuple[Span, ...], tuple[str, ...]], _QueryFacts] = field(default_factory=dict)
    scored: dict[tuple[tuple[Span, ...], tuple[str, ...], tuple[int, ...], int, tuple[Span, ...] | None],
                 dict[str, float]] = field(default_factory=dict)


def _relocated(dataset: Dataset, piece: Chunk | Span) -> Span:
    """Where chunking_evaluation would place `piece`: the first occurrence of its text (see `compat.py`)."""
    text = dataset.documents[piece.doc_id].text
    start, end = relocate_like_chunking_evaluation(text, text[piece.start : piece.end])
    return Span(piece.doc_id, start, end)
