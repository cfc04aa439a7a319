"""Scores one run, query by query: token, chunk and ranking metrics from span overlap alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragsweep.metrics.chunk import CHUNK_METRICS, chunk_scores
from ragsweep.metrics.compat import compat_precision_omega, compat_token_scores, relocate_like_chunking_evaluation
from ragsweep.metrics.intervals import intersection_length, overlap_matrix, union_length
from ragsweep.metrics.ranking import RANKING_METRICS
from ragsweep.metrics.token import TOKEN_METRICS, precision_omega, token_scores
from ragsweep.metrics.units import UNITS, UnitLine
from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Chunk, Dataset, Hit, Query, Span

METRIC_KEYS = (*TOKEN_METRICS, "precision_omega", *CHUNK_METRICS, *RANKING_METRICS)
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
    """

    def __init__(
        self, unit: str = "tokens", mode: str = "standard", gain: str = "binary", encoding: str = "cl100k_base"
    ) -> None:
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

    def score(self, dataset: Dataset, chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]], k: int) -> list[dict]:
        """One `{metric: value}` per query, in `dataset.queries` order, over each query's top k hits."""
        if k <= 0:
            raise ValueError(f"k must be > 0, got {k}")
        chars = _unit_line(dataset, "chars", self.tokenizer)
        units = _unit_line(dataset, "tokens", self.tokenizer) if self.unit == "tokens" else chars
        spans = [chunk.span for chunk in chunks]
        positions = _Positions(chars, units, chars.intervals(spans), units.intervals(spans))
        if self.mode == "chroma_compat":
            positions.located = chars.intervals([_relocated(dataset, chunk) for chunk in chunks])
        return [
            self._score_query(query, [hit.index for hit in query_hits[:k]], k, positions)
            for query, query_hits in zip(dataset.queries, hits, strict=True)
        ]

    def _score_query(self, query: Query, top: list[int], k: int, at: _Positions) -> dict[str, float]:
        reference_chars = at.chars.intervals(query.references)
        reference_units = at.units.intervals(query.references)
        if at.located is None:
            scores = token_scores(at.chunk_units[top], reference_units)
            scores["precision_omega"] = precision_omega(at.chunk_units, reference_units)
        else:
            scores = compat_token_scores(at.located[top], reference_chars)
            scores["precision_omega"] = compat_precision_omega(at.located, reference_chars)
        scores.update(chunk_scores(at.chunk_chars[top], reference_chars))
        gains = self._gains(at, reference_chars, reference_units)
        for name, metric in RANKING_METRICS.items():
            scores[name] = metric(gains[top], gains[gains > 0], k)
        return scores

    def _gains(self, at: _Positions, reference_chars: np.ndarray, reference_units: np.ndarray) -> np.ndarray:
        """Gain of every chunk of the chunking for one query (0 for chunks sharing no character)."""
        relevant = overlap_matrix(at.chunk_chars, reference_chars).any(axis=1)
        gains = relevant.astype(np.float64)
        if self.gain == "overlap":
            reference_size = union_length(reference_units)
            for i in np.flatnonzero(relevant):
                gains[i] = intersection_length(at.chunk_units[i : i + 1], reference_units) / reference_size
        return gains


_UNIT_LINES: dict[tuple[str, str, str], UnitLine] = {}


def _unit_line(dataset: Dataset, unit: str, tokenizer: Tokenizer) -> UnitLine:
    """One UnitLine per dataset, unit and encoding per process: tokenising the corpora is the slow part
    of scoring, and a sweep scores the same dataset once per configuration."""
    key = (dataset.fingerprint, unit, tokenizer.encoding)
    if key not in _UNIT_LINES:
        if len(_UNIT_LINES) >= 4:
            _UNIT_LINES.pop(next(iter(_UNIT_LINES)))
        _UNIT_LINES[key] = UnitLine(dataset.documents, unit, tokenizer)
    return _UNIT_LINES[key]


@dataclass
class _Positions:
    """Where the chunks of one run lie: true characters, metric units, and (compat) relocated characters."""

    chars: UnitLine
    units: UnitLine
    chunk_chars: np.ndarray
    chunk_units: np.ndarray
    located: np.ndarray | None = None


def _relocated(dataset: Dataset, chunk: Chunk) -> Span:
    start, end = relocate_like_chunking_evaluation(dataset.documents[chunk.doc_id].text, chunk.text)
    return Span(chunk.doc_id, start, end)
