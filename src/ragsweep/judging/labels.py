"""People's verdicts on some of a run's claims, for the prediction-powered faithfulness estimate.

A JSONL file, one labelled claim per line: `{"id": query id, "claim": claim text, "label": 0|1}`,
the claim as the judge split the answer (the `claim` of its `support/<i>` feedback on the run's trace;
`ragsweep labels pull` writes the file from people's overrides there). Label a few dozen claims of one
run; every later run whose answers contain them reports `faithfulness_ppi` beside the judge's own
estimate (generation is greedy and seeded, so a rerun produces the same claims).
"""

from __future__ import annotations

import json
from pathlib import Path


def claim_key(query_id: str, claim: str) -> tuple[str, str]:
    return str(query_id), " ".join(claim.split()).lower()


def load_claim_labels(path: str | Path) -> dict[tuple[str, str], int]:
    """{(query id, normalised claim): label}; a bad line fails naming the file, the line and the fix."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ValueError(f"judge.labels={path} does not exist; give a JSONL file of "
                         '{"id", "claim", "label"} lines or set judge.labels=null')
    labels: dict[tuple[str, str], int] = {}
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"judge.labels={path} line {number}: not JSON ({error.msg})") from None
        if not isinstance(record, dict) or not {"id", "claim", "label"} <= set(record):
            raise ValueError(f"judge.labels={path} line {number}: needs keys id, claim and label")
        if record["label"] not in (0, 1) or isinstance(record["label"], bool):
            raise ValueError(f"judge.labels={path} line {number}: label must be 0 or 1, got {record['label']!r}")
        labels[claim_key(record["id"], str(record["claim"]))] = int(record["label"])
    if not labels:
        raise ValueError(f"judge.labels={path} holds no labelled claims")
    return labels
