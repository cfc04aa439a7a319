"""Claims made from a corpus by rule (FactCC): reproducible, balanced, every kind made, and each rule does
what its label says: supported claims use only the passage's words, unsupported ones change something."""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import pytest

from ragsweep.judging.training.claim_rules import (_BACKSHIFT, FRAMES, Corpus, _changed_number, _entity, _negation,
                                                  _pronoun)
from ragsweep.judging.training.synthetic import SUPPORTED, UNSUPPORTED, claims_passages, make_examples

WORDS = re.compile(r"[a-z0-9]+")
# words a reporting frame or reported speech adds (claim_rules.FRAMES, claim_rules._BACKSHIFT)
FRAME_WORDS = set("the speaker said that address states it was text reports according to passage speech declared "
                  "were had would could should might and".split())


@pytest.fixture(scope="module")
def sotu_texts() -> list[str]:
    from ragsweep.data.sotu_qa import SotuQADataset

    return [document.text for document in SotuQADataset().load().documents.values()]


@pytest.fixture(scope="module")
def examples(sotu_texts):
    return make_examples(sotu_texts, 840, seed=7)


def test_the_same_seed_makes_the_same_examples_and_another_seed_others(sotu_texts):
    assert make_examples(sotu_texts, 60, seed=1) == make_examples(sotu_texts, 60, seed=1)
    assert make_examples(sotu_texts, 60, seed=1) != make_examples(sotu_texts, 60, seed=2)


def test_labels_are_balanced_and_every_kind_is_made(examples):
    assert Counter(e.label for e in examples) == {1: 420, 0: 420}
    kinds = Counter(e.kind for e in examples)
    # 420 supported over 5 kinds = 84 each; 420 unsupported over 7 = 60 each (no rule ran out of passages)
    assert kinds == {**{kind: 84 for kind in SUPPORTED}, **{kind: 60 for kind in UNSUPPORTED}}
    assert all(e.label == int(e.kind in SUPPORTED) for e in examples)


def test_every_supported_claim_uses_only_words_of_its_passage(examples):
    for e in (e for e in examples if e.label == 1):
        extra = set(WORDS.findall(e.claim.lower())) - set(WORDS.findall(e.passage.lower())) - FRAME_WORDS
        assert not extra, (e.kind, e.claim, e.passage)
        assert e.source in e.passage


def _words(text: str) -> list[str]:
    """Lower-case words without a reporting frame, present tense shifted back as a past frame does."""
    text = next((text[len(frame):] for frame in FRAMES if text.startswith(frame)), text)
    return [_BACKSHIFT.get(word, word) for word in WORDS.findall(text.lower())]


def test_every_unsupported_claim_differs_from_its_source_sentence(examples):
    for e in (e for e in examples if e.label == 0):
        assert _words(e.claim) != _words(e.source), (e.kind, e.claim)
        assert e.source in e.passage
        if e.kind in ("same_document", "other_document"):
            assert " ".join(_words(e.claim)) not in " ".join(_words(e.passage)), e.claim


CORPUS = Corpus(["In 1862 Lincoln wrote to Congress about the blockade of 3,000 miles of coast.",
                 "Later Roosevelt spoke to Congress about Europe and Asia; he said we will act."])


@pytest.mark.parametrize(("rule", "source", "changed"), [
    (_changed_number, "The blockade covered 3,000 miles in 1862.", r"^The blockade covered (?!3,000 miles in 1862)"),
    (_changed_number, "We have two ships and twenty men here.",
     r"^We have (?!two ships and twenty)\w+ ships and \w+ men here"),
    (_negation, "The treaty was signed by both nations.", r"^The treaty was (not|never) signed by both nations\.$"),
    (_negation, "Peace was likely and the army is ready.", r"^Peace was (not|never) likely and the army is ready\.$"
                                                         r"|^Peace was likely and the army is not ready\.$"),
    (_negation, "It will not have become full.", r"^It will have become full\.$"),
    (_negation, "We can't go back to the old era.", r"^We can go back to the old era\.$"),
    (_negation, "This is not the time to wait.", r"^This is the time to wait\.$"),
    (_pronoun, "He said that we will act.", r"^(She said that we|He said that they) will act\.$"),
    (_entity, "The fleet sailed from Europe to Asia.", r"^The fleet sailed from (Asia to Europe|(?!Europe)\w+ to Asia"
                                                      r"|Europe to (?!Asia)\w+)\.$"),
])
def test_each_corruption_changes_exactly_its_target(rule, source, changed):
    for seed in range(8):
        claim = rule(source, CORPUS, source, random.Random(seed))
        assert claim is not None and claim != source and re.match(changed, claim), claim


def test_a_rule_that_does_not_apply_says_so():
    assert _changed_number("No digits in this sentence at all.", CORPUS, "", random.Random(0)) is None
    assert _negation("Bananas yellow ripen quickly.", CORPUS, "", random.Random(0)) is None


def test_claims_passages_reads_contexts_without_labels(tmp_path):
    path = tmp_path / "claims.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in [
        {"id": "a", "claim": "x", "context": ["First passage.", "Second passage."]},
        {"id": "b", "claim": "y", "context": ["Second passage."]}]) + "\n\n")
    assert claims_passages(path) == ["First passage.", "Second passage."]
    path.write_text(json.dumps({"id": "c", "context": "not a list"}))
    with pytest.raises(ValueError, match="claims.jsonl:1: field 'context' must be a list"):
        claims_passages(path)


def test_too_few_examples_or_an_empty_corpus_raise_naming_the_setting():
    with pytest.raises(ValueError, match=r"judge\.examples must be >= 2"):
        make_examples(["A sentence with enough words to use here."], 1)
    with pytest.raises(ValueError, match="no sentences"):
        make_examples(["", "   "], 10)
