"""What each drafted question was asked for, and the filters it passes, in order, before it is kept.

Each excerpt of a draft is located in its document as a span (the span's text is the document's, never the
model's copy); then the filters screen the draft in the order of `FILTERS`, and the first that fails it is
recorded as the reason it was dropped, with a detail the report shows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragsweep.data.locate import Located, locate
from ragsweep.judging.base import Pair, Verdict
from ragsweep.judging.claims import split_claims
from ragsweep.questions import filters
from ragsweep.questions.drafts import Draft, next_wanted, schema_for
from ragsweep.types import Chunk, Document, Span

FILTERS = {  # filters.<key> -> the check it sets, in the order drafts are screened
    "min_location_similarity": "located", "min_excerpt_relevance": "excerpt_relevance",
    "max_duplicate_similarity": "duplicate", "round_trip_k": "round_trip", "min_answer_support": "answerability",
}
UNSUPPORTED_ANSWER = ("drop_question", "drop_answer")  # what answerability drops: the draft, or only its answer


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


def attempts_for(passages: Sequence[Chunk], achieved: Mapping[str, Counter],
                 settings: Mapping[str, Any]) -> list[Attempt]:
    """Each passage with the type and difficulty the kept questions are furthest short of (counting the ones
    asked for just before as if kept)."""
    pending = {key: Counter(counts) for key, counts in achieved.items()}
    attempts = []
    for passage in passages:
        kind = next_wanted(settings["types"], pending["type"])
        level = next_wanted(settings["difficulties"], pending["difficulty"])
        pending["type"][kind] += 1
        pending["difficulty"][level] += 1
        schema = schema_for(passage.text, settings["constrain_excerpts"])
        attempts.append(Attempt(passage, kind, level, schema))
    return attempts


class DraftScreen:
    """The filters of one question set, run in order on each draft; it remembers the questions kept.

    Args:
        documents: The set's documents by id.
        limits: The checked `filters` settings.
        embedder: Encodes questions (`role="query"`) and excerpts (`role="passage"`).
        retriever: The reference retriever, indexed on `chunks` (searched when `round_trip_k` > 0).
        chunks: What `retriever` indexed.
        verdicts: The judge's verdicts on (claim, excerpt) pairs; None without a judge.
        threshold: The judge's score at which a claim counts as supported.
    """

    def __init__(self, documents: Mapping[str, Document], limits: Mapping[str, Any], embedder: Any,
                 retriever: Any, chunks: Sequence[Chunk], verdicts: Callable[[list[Pair]], list[Verdict]] | None,
                 threshold: float | None) -> None:
        self.documents, self.limits, self.embedder, self.retriever = documents, limits, embedder, retriever
        self.chunks, self.verdicts, self.threshold = chunks, verdicts, threshold
        self.vectors: list[np.ndarray] = []  # the kept questions, for the duplicate filter

    def __call__(self, screened: Screened) -> Screened:
        """Run the filters in order; the first that fails sets `reason` and `detail`."""
        if screened.reason is not None:
            return screened
        draft, passage, limits = screened.draft, screened.attempt.passage, self.limits
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
        similarity, position = filters.nearest_kept(question, np.array(self.vectors).reshape(-1, len(question)))
        if similarity > limits["max_duplicate_similarity"]:
            return _drop(screened, "duplicate", f"cosine {similarity:.2f} to kept question {position + 1}")
        if limits["round_trip_k"]:
            hits = self.retriever.search([draft.question], limits["round_trip_k"])[0]
            if filters.round_trip_rank([self.chunks[hit.index].span for hit in hits],
                                       [s for s, _ in screened.spans]) is None:
                return _drop(screened, "round_trip", f"no excerpt in the top {limits['round_trip_k']} of the "
                                                     "reference retriever")
        if self.verdicts is not None and limits["min_answer_support"] > 0:
            dropped = self._answerability(screened, text)
            if dropped is not None:
                return dropped
        self.vectors.append(question)
        return screened

    def _answerability(self, screened: Screened, text: str) -> Screened | None:
        """The draft dropped for an answer its excerpts do not support (or a failed judge call); None when it
        stays, its answer dropped under `unsupported_answer=drop_answer`."""
        claims = [claim.text for claim in split_claims(screened.draft.answer)]
        passages = [text[s.start:s.end] for s, _ in screened.spans]
        pairs = [Pair(claim, passage) for claim in claims for passage in passages]
        verdicts = self.verdicts(pairs)
        failed = [v for v in verdicts if not v.ok]
        if failed:
            return _drop(screened, "judge_failed", f"{failed[0].status}: {failed[0].raw[-120:]!r}")
        scores = [[verdicts[c * len(passages) + p].score for p in range(len(passages))] for c in range(len(claims))]
        share = filters.supported_share(scores, self.threshold)
        if share < self.limits["min_answer_support"]:
            if self.limits["unsupported_answer"] == "drop_question":
                return _drop(screened, "answerability",
                             f"{share:.0%} of the answer's claims supported by its excerpts")
            screened.answer_dropped = True  # kept for its spans; no reference answer to score answers against
        return None


def _drop(screened: Screened, reason: str, detail: str) -> Screened:
    screened.reason, screened.detail = reason, detail
    return screened
