"""Which passages a question set is drafted from: every document covered in proportion to its length."""

from __future__ import annotations

import random
from collections.abc import Mapping


def quotas(lengths: Mapping[str, int], per_document: int) -> dict[str, int]:
    """Questions wanted per document: `per_document` × documents in all, shared in proportion to each
    document's length by largest remainder (ties to the earlier id), at least one per document."""
    if isinstance(per_document, bool) or not isinstance(per_document, int) or per_document < 1:
        raise ValueError(f"questions_per_document must be an integer >= 1, got {per_document!r}")
    ids = sorted(lengths)
    total_length = sum(lengths.values()) or 1
    spare = per_document * len(ids) - len(ids)  # one each first, the rest by length
    shares = {doc_id: spare * lengths[doc_id] / total_length for doc_id in ids}
    counts = {doc_id: 1 + int(shares[doc_id]) for doc_id in ids}
    left = per_document * len(ids) - sum(counts.values())
    for doc_id in sorted(ids, key=lambda d: (-(shares[d] - int(shares[d])), d))[:left]:
        counts[doc_id] += 1
    return counts


def attempt_order(passages: int, wanted: int, seed: int, doc_id: str) -> list[int]:
    """Every passage index of a document, in the order to try them: the first `wanted` from `wanted`
    equal stretches of the document (one each, chosen at random), then a second round, and so on, so
    the questions kept spread over the whole text. Seeded by (seed, document): reproducible, and one
    document's order does not change when another is added."""
    rng = random.Random(f"{seed}:{doc_id}")
    strata = max(1, min(wanted, passages))
    members: dict[int, list[int]] = {}
    for index in range(passages):
        members.setdefault(index * strata // passages, []).append(index)
    for group in members.values():
        rng.shuffle(group)
    rounds = max((len(group) for group in members.values()), default=0)
    return [group[r] for r in range(rounds) for _, group in sorted(members.items()) if r < len(group)]
