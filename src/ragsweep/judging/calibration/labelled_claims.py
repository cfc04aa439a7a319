"""Labelled claims files, which `ragsweep calibrate` measures a judge against, and the two shipped sets.

One JSON object per line: `{"id", "question", "context": [passages], "claim", "label": 0|1, "kind"?}`. A
passage is a text, or a span of a document in a folder, so a claims set can cite a corpus without copying
it. A bad line fails naming the file, the line, the key and the fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

KEYS = ("id", "question", "context", "claim", "label")


def default_claims() -> Path:
    """The labelled sotu claims shipped with ragsweep (package data)."""
    return Path(str(resources.files("ragsweep.data") / "claims" / "sotu_claims.jsonl"))


def heldout_claims() -> Path:
    """The labelled claims over chroma_general's finance, pubmed and wikitexts corpora (package data): their
    passages are spans of those corpora, resolved from `HELDOUT_DOCUMENTS` under `paths.data`."""
    return Path(str(resources.files("ragsweep.data") / "claims" / "chroma_claims.jsonl"))


HELDOUT_DOCUMENTS = "chroma_general/corpora"  # under paths.data: the documents heldout_claims() cites


@dataclass(frozen=True)
class LabelledClaim:
    """One line of a claims file: `claim` is supported (label 1) or not (0) by `context` alone."""

    id: str
    question: str
    context: tuple[str, ...]
    claim: str
    label: int
    kind: str = ""


def load_claims(path: str | Path | None = None, documents: str | Path | None = None) -> list[LabelledClaim]:
    """Read a claims JSONL file (default: the shipped sotu set); blank lines are skipped. A passage is a text,
    or a span `{"doc_id", "start", "end"}` of the document `<documents>/<doc_id>.md` (or `.txt`), so a
    claims set can cite a corpus without copying it.

    Raises:
        ValueError: naming the file, the line, the key and the fix, for the first bad line.
    """
    path = Path(path) if path is not None else default_claims()
    if not path.is_file():
        raise ValueError(f"{path}: no such claims file; give --claims a JSONL file of "
                         '{"id", "question", "context": [passages], "claim", "label": 0|1, "kind"?} lines')
    claims, first_line, texts = [], {}, _Documents(documents)
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        claim = _parse(text, f"{path}, line {number}", texts)
        if claim.id in first_line:
            raise ValueError(f"{path}, line {number}: key 'id': {claim.id!r} is already the id of line "
                             f"{first_line[claim.id]}; give each claim its own id")
        first_line[claim.id] = number
        claims.append(claim)
    if not claims:
        raise ValueError(f"{path}: no claims in the file; write one JSON object per line")
    return claims


class _Documents:
    """The documents span passages cite, read once each from a folder."""

    def __init__(self, folder: str | Path | None) -> None:
        self.folder, self.texts = Path(folder) if folder is not None else None, {}

    def passage(self, span: dict, where: str) -> str:
        if set(span) != {"doc_id", "start", "end"} or not all(isinstance(span[k], int) and not isinstance(span[k], bool)
                                                               for k in ("start", "end")):
            raise ValueError(f"{where}: key 'context': a span passage is {{\"doc_id\", \"start\", \"end\"}} with "
                             f"integer offsets, got {span!r}")
        doc_id = str(span["doc_id"])
        if doc_id not in self.texts:
            if self.folder is None:
                raise ValueError(f"{where}: key 'context': passages are spans of document {doc_id!r}; give "
                                 "--documents FOLDER, the folder holding it as <doc_id>.md or .txt")
            found = [self.folder / f"{doc_id}{suffix}" for suffix in (".md", ".txt")
                     if (self.folder / f"{doc_id}{suffix}").is_file()]
            if not found:
                raise ValueError(f"{where}: key 'context': no {doc_id}.md or {doc_id}.txt in {self.folder}; point "
                                 "--documents (or paths.data) at the folder of the corpus these claims cite")
            self.texts[doc_id] = found[0].read_text(encoding="utf-8")
        document = self.texts[doc_id]
        if not 0 <= span["start"] < span["end"] <= len(document):
            raise ValueError(f"{where}: key 'context': span {span['start']}-{span['end']} lies outside {doc_id} "
                             f"({len(document)} characters); is --documents the corpus these claims were written on?")
        return document[span["start"]:span["end"]]


def _parse(text: str, where: str, documents: _Documents | None = None) -> LabelledClaim:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: not valid JSON ({error.msg} at column {error.colno}); "
                         "write one JSON object per line") from None
    if not isinstance(row, dict):
        raise ValueError(f"{where}: a line must be a JSON object with keys {', '.join(KEYS)}")
    for key in KEYS:
        if key not in row:
            raise ValueError(f"{where}: key '{key}' is missing; every line needs {', '.join(KEYS)} (kind optional)")
    if not isinstance(row["id"], (str, int)) or isinstance(row["id"], bool) or str(row["id"]) == "":
        raise ValueError(f"{where}: key 'id': must be a non-empty string, got {row['id']!r}")
    for key in ("question", "claim"):
        if not isinstance(row[key], str) or (key == "claim" and not row[key].strip()):
            raise ValueError(f"{where}: key '{key}': must be a{' non-empty' if key == 'claim' else ''} string, "
                             f"got {row[key]!r}")
    context = row["context"]
    if not isinstance(context, list) or not context:
        raise ValueError(f"{where}: key 'context': must be a non-empty list of passages, got {context!r}; "
                         "give at least one passage the claim is judged against")
    documents = documents or _Documents(None)
    context = [documents.passage(passage, where) if isinstance(passage, dict) else passage for passage in context]
    if not all(isinstance(passage, str) and passage.strip() for passage in context):
        raise ValueError(f"{where}: key 'context': every passage must be a non-empty string or a span "
                         '{"doc_id", "start", "end"}')
    if row["label"] not in (0, 1) or isinstance(row["label"], bool):
        raise ValueError(f"{where}: key 'label': must be 1 (the context supports the claim) or 0 (it does not), "
                         f"got {row['label']!r}")
    kind = row.get("kind") or ""
    if not isinstance(kind, str):
        raise ValueError(f"{where}: key 'kind': must be a string such as \"paraphrase\" or be left out, got {kind!r}")
    return LabelledClaim(str(row["id"]), row["question"], tuple(context), row["claim"], int(row["label"]), kind)
