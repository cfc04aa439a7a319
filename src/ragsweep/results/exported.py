"""An export's files read back (conf/best/<name>.yaml, its manifest and per-question metrics), and the error every
results command raises when there is nothing to rank, export or compare."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

from ragsweep import per_query as per_query_file
from ragsweep.runner.errors import yaml_problem


class ResultsError(ValueError):
    """Nothing to rank, export or compare; the message says what to run first."""

    exit_code = 2  # bad input; 1 for a rerun that stopped at a folder it cannot write


class RerunCannotWrite(ResultsError):
    """A rerun stopped at a folder it cannot write (read-only, full, forbidden), which its one line names."""

    exit_code = 1


def questions_file(config_path: Path) -> Path:
    """`conf/best/<name>.per_query.jsonl`, beside the config it belongs to."""
    return config_path.with_name(f"{config_path.stem}.per_query.jsonl")


def exported_questions(config_path: Path, manifest: dict) -> dict[str, dict[str, float]] | None:
    """The export's per-question metrics, question id -> metrics; None when the file is absent (exported
    before `best` wrote it, or not committed). ResultsError when it is not the file the manifest names."""
    path = questions_file(config_path)
    if not path.is_file():
        return None
    if normalised_sha256(path) != manifest.get("per_query", {}).get("sha256"):
        raise ResultsError(f"{path} does not match the sha256 in {config_path.stem}.manifest.json: it was "
                           "edited or belongs to another export; restore it from git or export again with "
                           "`ragsweep best`")
    return read_per_query(path)


def normalised_sha256(path: Path) -> str:
    """The file's sha256 with CRLF read as LF, so a checkout with core.autocrlf is not taken for an edit."""
    return hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()


def read_per_query(path: Path) -> dict[str, dict[str, float]]:
    """A job's per_query.jsonl (or .jsonl.gz), or a job folder holding one, as question id -> its metrics."""
    records = per_query_file.records(per_query_file.find(path) if Path(path).is_dir() else path)
    return {record["id"]: {name: float(value) for name, value in record["metrics"].items()} for record in records}


def read_hashes(path: Path) -> dict[str, str | None]:
    """A per_query.jsonl (or a job folder holding one, or an export's per-question file) as question id -> its
    `Query.sha256`, None where the run recorded none (results.question_sets)."""
    records = per_query_file.records(per_query_file.find(path) if Path(path).is_dir() else path)
    return {record["id"]: record.get(per_query_file.HASH) for record in records}


MANIFEST_KEYS = ("experiment", "run_id", "metric", "metrics", "dataset", "config_fingerprint")


def read_manifest(config_path: Path) -> dict:
    """The export's manifest, after checking that it and its config parse: a cut or edited file is refused in one
    line, not a traceback."""
    manifest_path = config_path.with_name(f"{config_path.stem}.manifest.json")
    if not config_path.is_file() or not manifest_path.is_file():
        raise ResultsError(f"{config_path} or its manifest {manifest_path.name} is missing; "
                           "write them with: ragsweep best --experiment <name> --metric <metric>")
    redo = "restore it from git or export again with `ragsweep best`"
    try:
        yaml.safe_load(config_path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ResultsError(f"{config_path}: {yaml_problem(error)}; {redo}") from None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ResultsError(f"{manifest_path}: not valid JSON ({error.msg} at line {error.lineno}, column "
                           f"{error.colno}): it was cut short or edited; {redo}") from None
    missing = [key for key in MANIFEST_KEYS if not isinstance(manifest, dict) or key not in manifest]
    if missing:
        raise ResultsError(f"{manifest_path}: no {', '.join(missing)}; {redo}")
    return manifest
