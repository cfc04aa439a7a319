"""Labelled (passage, claim) examples made from a corpus by rule, with no human labels (FactCC).

Kryściński et al. (2020), "Evaluating the Factual Consistency of Abstractive Text Summarization",
trained a support classifier on sentences of a document (and rewrites of them) as consistent claims
and on rule-made corruptions of those sentences as inconsistent ones. The same recipe here, for any
corpus: a passage is a few consecutive sentences of a document; a supported claim is one of its
sentences, a clause-dropped, cut, reordered or merged form of it; an unsupported claim is that sentence
with one number, name, pronoun or negation changed, with a detail from elsewhere added, or a sentence
from outside the passage. Claims come in minimal pairs (one of each label from the same sentence), and a
share of pairs gets a reporting frame ("The speaker said that ...", as answers about a text are often
worded) on both claims, so neither the passage nor the frame says anything about the label.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragsweep.judging.training.claim_rules import (FRAMES, RULES, Corpus, framed, merge, normal, outside,
                                         usable_sentence)

SUPPORTED = ("sentence", "clause_drop", "fragment", "reorder", "merge")
UNSUPPORTED = ("number", "entity", "pronoun", "negation", "invented", "same_document", "other_document")


@dataclass(frozen=True)
class Example:
    """One training pair; `label` 1 = the passage supports the claim; `source` is the sentence it came from."""

    passage: str
    claim: str
    label: int
    kind: str
    source: str


def make_examples(texts: Sequence[str], n: int, seed: int = 0) -> list[Example]:
    """`n` examples, the same for a seed: supported and unsupported in turn, each kind of a label about equally
    often. Each supported claim and the unsupported one after it come from the same sentence of the same
    passage (a minimal pair), so what tells them apart is the change, not the passage.

    Raises:
        ValueError: n < 2, or a corpus with no usable sentence.
    """
    if n < 2:
        raise ValueError(f"judge.examples must be >= 2 (half supported, half not), got {n}")
    corpus, rng = Corpus(texts), random.Random(seed)
    examples: list[Example] = []
    for i in range((n + 1) // 2):
        wanted = (SUPPORTED[i % len(SUPPORTED)], UNSUPPORTED[i % len(UNSUPPORTED)])
        # a rule that does not apply to a passage (no number in it) tries other passages, then kinds that apply
        # to any corpus of two or more texts (short passages as documents have no sentence outside the passage)
        pair = next((pair for kinds in (wanted, (wanted[0], "other_document"), ("sentence", "other_document"),
                                        ("sentence", "same_document"))
                     for _ in range(1000 if kinds == wanted else 100) if (pair := _pair(corpus, kinds, rng))), None)
        if pair is None:
            raise ValueError("the corpus is too small to make claims from: give it at least two sentences of 6+ words")
        examples += pair
    return examples[:n]


def _pair(corpus: Corpus, kinds: tuple[str, str], rng: random.Random) -> tuple[Example, Example] | None:
    """A supported and an unsupported claim from one sentence of one passage, with the same frame (or none)."""
    doc, first, end = corpus.passage(rng)
    sents = corpus.docs[doc]
    usable = [i for i in range(first, end) if usable_sentence(sents[i])]
    if not usable:
        return None
    index = rng.choice(usable)
    source, passage = sents[index], " ".join(sents[first:end])
    claims = []
    for kind in kinds:
        if kind in ("same_document", "other_document", "invented"):
            claim = outside(corpus, kind, doc, first, end, source, rng)
        elif kind == "merge":
            others = [i for i in usable if i != index]
            claim = merge(source, sents[rng.choice(others)], corpus, rng) if others else None
        else:
            claim = RULES[kind](source, corpus, passage, rng)
        if claim is None or len(claim.split()) < 4 or (kind in UNSUPPORTED and normal(claim) == normal(source)):
            return None
        claims.append(claim)
    frame = rng.choice(FRAMES) if rng.random() < 0.3 else None
    return tuple(Example(passage, framed(claim, frame, corpus) if frame else claim, int(kind in SUPPORTED), kind,
                         source) for kind, claim in zip(kinds, claims))


def claims_passages(path: str | Path) -> list[str]:
    """The distinct passages (the `context` field) of a labelled claims file, in file order; the labels are
    never read, so a judge trained on them has seen the file's texts, not its answers."""
    passages: dict[str, None] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                context = json.loads(line).get("context")
                if not isinstance(context, list):
                    raise ValueError(f"{path}:{number}: field 'context' must be a list of passages")
                passages.update(dict.fromkeys(p for p in context if isinstance(p, str) and p.strip()))
    return list(passages)
