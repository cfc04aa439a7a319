"""Support as meaning, not wording: the cosine of the claim and the passage sentence closest to it.

A claim usually rests on one sentence, and a whole passage's embedding dilutes it, so the passage is
split into sentences first. Cosine measures topic more than truth (a negated or number-changed claim
stays close), so this judge is fast and weak on hard negatives: measure it before trusting it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragsweep.chunking.sentence import sentence_bounds
from ragsweep.embedding.base import Embedder
from ragsweep.judging.base import Pair, Verdict, check_threshold


def sentences(passage: str) -> list[str]:
    found = [passage[start:end].strip() for start, end in sentence_bounds(passage)]
    return [sentence for sentence in found if sentence] or [passage]


class EmbeddingJudge:
    """max over the passage's sentences of cos(claim, sentence), clipped at 0.

    Args:
        embedder: Any ragsweep embedder (a nested `_target_` config; its vectors are cached per text).
        threshold: Cosine at which a claim counts as supported.
    """

    def __init__(self, embedder: Embedder, threshold: float = 0.6) -> None:
        check_threshold(threshold)
        self.embedder, self.threshold = embedder, float(threshold)

    def preflight(self) -> None:
        check = getattr(self.embedder, "preflight", None)
        if check:
            check()

    def judge(self, pairs: Sequence[Pair]) -> list[Verdict]:
        if not pairs:
            return []
        split = [sentences(pair.passage) if pair.passage else [""] for pair in pairs]
        texts = list(dict.fromkeys([pair.claim for pair in pairs] + [s for parts in split for s in parts]))
        row = {text: position for position, text in enumerate(texts)}
        vectors = np.asarray(self.embedder.encode(texts, role="passage"), dtype=np.float64)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        verdicts = []
        for pair, parts in zip(pairs, split, strict=True):
            if not pair.passage:
                verdicts.append(Verdict(0.0))
                continue
            cosines = vectors[[row[part] for part in parts]] @ vectors[row[pair.claim]]
            verdicts.append(Verdict(float(np.clip(cosines.max(), 0.0, 1.0))))
        return verdicts
