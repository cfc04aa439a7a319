"""Judged metrics of one answer, from its judge's verdicts: pure functions, formulas in each docstring.

Inputs per question: `support[c][p]`, the judge's support probability of claim c by retrieved
passage p (None where the call failed); `relevance[p]`, passage p's relevance to the question (its span
label, or a relevance judge's score); the claims' citations; and the threshold the judge was
calibrated at. A metric that cannot be
computed (no claims, every call failed) is left out of the question's scores, never set to 0 or NaN,
so a run's mean is over the questions that have it (`n` in metrics.json says how many).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Scores = Sequence[float | None]

JUDGED_METRICS = ("faithfulness", "groundedness", "answer_relevance", "triad_overall", "citation_accuracy",
                  "citation_coverage")
TRIAD_WEIGHTS = (0.35, 0.35, 0.30)  # context_relevance, groundedness, answer_relevance (TruLens' RAG triad)
BANDS = (("excellent", 0.85), ("good", 0.70), ("fair", 0.50), ("poor", 0.0))


def best_passage(row: Scores) -> tuple[float, int] | None:
    """A claim's best support over its passages and that passage's 1-based rank (the later on a tie); None
    when every call failed."""
    scored = [(score, rank) for rank, score in enumerate(row, start=1) if score is not None]
    return max(scored) if scored else None


def claim_support(support: Sequence[Scores]) -> list[float | None]:
    """Each claim's support: max over passages p of support[c][p], over the calls that succeeded
    (None for a claim whose every call failed). A claim is grounded if any one passage supports it."""
    supports = []
    for row in support:
        scored = [score for score in row if score is not None]
        supports.append(max(scored) if scored else None)
    return supports


def faithfulness(supports: Scores, threshold: float) -> float | None:
    """|{c : support(c) ≥ τ}| / |{c scored}|, τ the judge's calibrated threshold (RAGAS' faithfulness:
    supported claims over claims, with a calibrated cut instead of an LLM's yes/no)."""
    scored = [score for score in supports if score is not None]
    return sum(score >= threshold for score in scored) / len(scored) if scored else None


def groundedness(supports: Scores) -> float | None:
    """mean over scored claims of support(c): the grounding score of VERA (Ding et al., 2024) and Azure
    AI's groundedness, which keeps how sure the judge is rather than cutting at a threshold."""
    scored = [score for score in supports if score is not None]
    return sum(scored) / len(scored) if scored else None


def context_relevance(relevance: Scores) -> float | None:
    """mean over the k passages of their relevance to the question (calls that failed left out): with a
    relevance judge's scores, `context_relevance_judged`, which needs no spans."""
    scored = [score for score in relevance if score is not None]
    return sum(scored) / len(scored) if scored else None


def citation_scores(citations: Sequence[Sequence[int]], support: Sequence[Scores],
                    threshold: float) -> dict[str, float]:
    """citation_accuracy = citations [n] whose passage n supports their claim (support ≥ τ) / citations;
    citation_coverage = claims with at least one citation / claims. A citation of a passage that was not
    retrieved counts as wrong; one whose call failed is left out of the accuracy."""
    scores: dict[str, float] = {}
    if citations:
        scores["citation_coverage"] = sum(bool(cited) for cited in citations) / len(citations)
    judged = []
    for cited, row in zip(citations, support, strict=True):
        for number in cited:
            score = row[number - 1] if 1 <= number <= len(row) else 0.0
            if score is not None:
                judged.append(score >= threshold)
    if judged:
        scores["citation_accuracy"] = sum(judged) / len(judged)
    return scores


def triad_overall(context: float | None, grounded: float | None, answer: float | None,
                  weights: Sequence[float] = TRIAD_WEIGHTS) -> float | None:
    """w1 · context_relevance + w2 · groundedness + w3 · answer_relevance (default 0.35, 0.35, 0.30),
    after TruLens' RAG triad; None when any part is missing."""
    parts = (context, grounded, answer)
    if any(part is None for part in parts):
        return None
    return sum(weight * part for weight, part in zip(weights, parts, strict=True)) / sum(weights)


def triad_band(score: float) -> str:
    """Excellent ≥ 0.85, Good 0.70–0.85, Fair 0.50–0.70, Poor < 0.50."""
    return next(name for name, floor in BANDS if score >= floor)


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a proportion (Wilson, 1927): (p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n).
    Unlike p̂ ± z·√(p̂(1−p̂)/n) it stays inside [0, 1] and covers near 0 and 1."""
    if n <= 0:
        raise ValueError("a Wilson interval needs n > 0")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n={n}, got {successes}")
    p = successes / n
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, center - half), min(1.0, center + half)


def micro_summaries(supports: Sequence[Scores], threshold: float) -> dict[str, dict]:
    """Over all scored claims of a run (each claim weighs the same, whichever answer it is in):
    faithfulness_micro with its Wilson 95% interval, and groundedness_micro (mean support)."""
    scored = [score for row in supports for score in row if score is not None]
    if not scored:
        return {}
    supported = sum(score >= threshold for score in scored)
    low, high = wilson_interval(supported, len(scored))
    return {"faithfulness_micro": {"value": supported / len(scored), "n": len(scored), "ci95": [low, high],
                                   "interval": "wilson"},
            "groundedness_micro": {"value": sum(scored) / len(scored), "n": len(scored)}}


def failure_rate(failed: int, calls: int) -> float | None:
    """Judge calls that failed (parse_failed or error) / calls."""
    return failed / calls if calls else None


def unanswered_terms(question: str, answer: str) -> list[str]:
    """The question's content words (see `judging.lexical.content_terms`) that the answer never uses:
    aspects of the question it may leave unanswered. Words only: a rough pointer, not a verdict."""
    from ragsweep.judging.lexical import content_terms

    answer_words, _ = content_terms(answer)
    seen, missing = set(), []
    for word in question.split():
        words, _ = content_terms(word)
        for stem in words - answer_words - seen:
            seen.add(stem)
            missing.append(word.strip("?.,;:!\"'()").lower())
    return missing


def diagnose(claims: Sequence[str], support: Sequence[Scores], relevance: Scores, question: str, answer: str,
             threshold: float, relevant: float = 0.5) -> dict:
    """What went wrong in one answer and what to change: claims below the threshold with the passage
    that supports them best (1-based rank) and its score, passages that are irrelevant (their span label,
    or a relevance score, below `relevant`), question words the answer leaves out, and one hint per problem found."""
    unsupported = []
    for text, row in zip(claims, support, strict=True):
        best = best_passage(row)
        if best is not None and best[0] < threshold:
            score, rank = best
            unsupported.append({"claim": text, "best_passage": rank, "score": round(score, 4)})
    irrelevant = [rank for rank, score in enumerate(relevance, start=1) if score is not None and score < relevant]
    missing = unanswered_terms(question, answer)
    hints = []
    if relevance and len(irrelevant) * 2 > len(relevance):
        hints.append("most passages are irrelevant to the question: improve retrieval (embedder, chunker) or rerank")
    if unsupported:
        hints.append("claims the passages do not support: constrain generation to the context, or use a citing prompt")
    if missing:
        hints.append("question terms the answer leaves out: retrieve more (raise k) or decompose the question")
    return {"unsupported_claims": unsupported, "irrelevant_passages": irrelevant, "unanswered_terms": missing,
            "hints": hints}
