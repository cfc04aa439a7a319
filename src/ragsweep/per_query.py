"""A job's per_query.jsonl: one JSON record per question, gzipped when large (per_query.jsonl.gz).

Its size grows with the questions, k and, with a judge, each question's claims and passages. Gzipped it takes
about a fifth of the disk (5.6 times less on sotu_qa's retrieval runs), and at thousands of runs these files
are most of a sweep's artifacts. Every reader finds and reads either form through this module.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

NAME = "per_query.jsonl"
COMPRESSED = f"{NAME}.gz"
NAMES = (NAME, COMPRESSED)
COMPRESS_OVER = 8 * 2**20  # bytes: larger files are kept gzipped
HASH = "question_sha256"  # a record's `Query.sha256`: which questions of two runs are the same (results.question_sets)


def finish(path: Path) -> Path:
    """The written per_query.jsonl, or in its place per_query.jsonl.gz when it is over `COMPRESS_OVER` bytes."""
    if path.stat().st_size <= COMPRESS_OVER:
        return path
    packed = path.with_name(COMPRESSED)
    with open(path, "rb") as plain, gzip.open(packed, "wb", compresslevel=6) as out:
        shutil.copyfileobj(plain, out)
    path.unlink()
    return packed


def find(folder: Path) -> Path:
    """The job folder's per_query file, in either form; FileNotFoundError naming the folder when it has none."""
    for name in NAMES:
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    raise FileNotFoundError(f"{folder} has no {NAME} (nor {COMPRESSED})")


def lines(path: Path) -> list[bytes]:
    """The file's non-blank lines, decompressed where it is gzipped."""
    opener = gzip.open if Path(path).suffix == ".gz" else open
    with opener(path, "rb") as handle:
        return [line for line in handle.read().splitlines() if line.strip()]


def records(path: Path) -> Iterator[dict]:
    """Each question's record, in file order."""
    return (json.loads(line) for line in lines(path))
