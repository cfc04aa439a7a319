"""People's verdicts on judged claims: the labelled pool that corrects a judge's numbers (`metrics.corrected`).

A JSONL file, one labelled claim per line: `{"id": query id, "claim": claim text, "label": 0|1}`, the claim as
the judge split the answer (the `claim` of its `support/<i>` feedback on the run's trace). `ragsweep labels
pull` writes it from people's overrides in MLflow and adds what pools the labels across configurations:
`judge` and `judge_score` (the judge that scored the claim, and its best support score), `inclusion` (the
probability `ragsweep labels sample` drew the claim with; 1 when it was not drawn) and `generator` (the
answering configuration, for the per-generator check). A line without a score of the run's own judge counts
where the run's answers hold its claim, scored by the run's verdicts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ClaimLabel:
    """One claim a person labelled, and what the judge said of it where the file records that."""

    id: str
    claim: str
    label: int
    judge: str | None = None
    judge_score: float | None = None
    inclusion: float = 1.0
    generator: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return claim_key(self.id, self.claim)


def claim_key(query_id: str, claim: str) -> tuple[str, str]:
    return str(query_id), " ".join(claim.split()).lower()


def load_claim_labels(path: str | Path) -> list[ClaimLabel]:
    """Every labelled claim of the file; a bad line fails naming the file, the line and the fix."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ValueError(f"judge.labels={path} does not exist; give a JSONL file of "
                         '{"id", "claim", "label"} lines or set judge.labels=null')
    labels = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            labels.append(_labelled(_json_line(line, path, number), path, number))
    if not labels:
        raise ValueError(f"judge.labels={path} holds no labelled claims")
    return labels


def _json_line(line: str, path: str | Path, number: int) -> dict:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"judge.labels={path} line {number}: not JSON ({error.msg})") from None
    if not isinstance(record, dict) or not {"id", "claim", "label"} <= set(record):
        raise ValueError(f"judge.labels={path} line {number}: needs keys id, claim and label")
    return record


def _labelled(record: dict, path: str | Path, number: int) -> ClaimLabel:
    where = f"judge.labels={path} line {number}"
    if record["label"] not in (0, 1) or isinstance(record["label"], bool):
        raise ValueError(f"{where}: label must be 0 or 1, got {record['label']!r}")
    inclusion = record.get("inclusion", 1.0)
    if isinstance(inclusion, bool) or not isinstance(inclusion, (int, float)) or not 0 < inclusion <= 1:
        raise ValueError(f"{where}: inclusion must be a probability in (0, 1], got {inclusion!r}")
    score = record.get("judge_score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        raise ValueError(f"{where}: judge_score must be a number or absent, got {score!r}")
    return ClaimLabel(str(record["id"]), str(record["claim"]), int(record["label"]), record.get("judge"),
                         None if score is None else float(score), float(inclusion), record.get("generator"))
