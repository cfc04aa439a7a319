"""Failures that end a job, and what a failed job does to its sweep.

A job whose query rewriter, generator or judge fails more calls than its config allows writes the failed calls
beside its results and ends with one line naming the file; a rerun retries only them, since failed calls are never
cached. In a sweep, the failed job is already recorded FAILED with its traceback; `fail_fast` decides
whether the sweep stops there or goes on, except for a folder it cannot write (read-only, full, forbidden), which
stops it: every next job would fail the same way.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import orjson

from ragsweep.disk import cannot_write
from ragsweep.generation.base import Generation
from ragsweep.query.base import Rewrite
from ragsweep.tracking.base import TrackingUnavailable
from ragsweep.types import Dataset

log = logging.getLogger(__name__)


class GenerationFailed(RuntimeError):
    """More questions failed to generate than `generator.max_error_rate` allows."""


class JudgingFailed(RuntimeError):
    """More judge calls failed than `judge.max_failure_rate` allows."""


class RewritingFailed(RuntimeError):
    """More questions' rewrites failed than `query.max_failure_rate` allows."""


JOB_FAILURES = (GenerationFailed, JudgingFailed, RewritingFailed, TrackingUnavailable)  # one line tells the user


def sweep_job_failed(name: str, error: Exception, fail_fast: bool, command_line: bool = True) -> None:
    """Stop the sweep after its job `name` raised `error` if `fail_fast`; otherwise log the failure and
    return, so the sweep goes on. Call it while handling `error`, whose run is already recorded FAILED.

    Args:
        name: The job's label.
        error: What the job raised.
        fail_fast: Whether the sweep stops at this failure.
        command_line: How it stops: with one line on stderr and exit code 1 (a `SystemExit`, which no launcher
            carries on past), and a traceback in the log for a failure outside `JOB_FAILURES`; False (the
            Python API, where nothing calls `sys.exit`) re-raises `error` and logs one line for any failure.
    """
    known = isinstance(error, JOB_FAILURES)
    if fail_fast:
        if not command_line:
            raise error
        print(f"ragsweep: error: job {name} failed and fail_fast=true stops the sweep: "
              f"{error if known else repr(error)}", file=sys.stderr)
        raise SystemExit(1) from (None if known else error)
    if known or not command_line:
        log.error("job %s failed: %s; it is recorded as FAILED and the sweep goes on", name, error)
    else:
        log.exception("job %s failed; it is recorded as FAILED and the sweep goes on (fail_fast=true stops it)", name)


def stop_on_refused_write(name: str, error: OSError, setting: str | None, in_sweep: bool) -> NoReturn:
    """End the job `name` (already recorded FAILED), and its sweep, in one line: a read-only, full or forbidden
    folder would fail every next job the same way, so a sweep stops rather than fail each in turn."""
    stops = f"job {name} failed and the sweep stops, as every next job would: " if in_sweep else ""
    print(f"ragsweep: error: {stops}{cannot_write(error, setting)}", file=sys.stderr)
    raise SystemExit(1) from None


def write_calls(path: Path, failed: list[dict], who: str) -> list[Path]:
    """`path`, one JSON line per failed call of `who` (none: no file, and [])."""
    if not failed:
        return []
    with path.open("wb") as out:
        for call in failed:
            out.write(orjson.dumps(call, option=orjson.OPT_APPEND_NEWLINE))
    log.warning("%d %s calls failed; see %s", len(failed), who, path)
    return [path]


def write_generation_errors(output_dir: Path, dataset: Dataset, generations: Sequence[Generation],
                            max_error_rate: float) -> list[Path]:
    """`generation_errors.jsonl`, one line per question whose generation failed (none: no file)."""
    failed = [(query, made) for query, made in zip(dataset.queries, generations, strict=True) if made.error]
    if not failed:
        return []
    path = output_dir / "generation_errors.jsonl"
    with path.open("wb") as out:
        for query, made in failed:
            out.write(orjson.dumps({"id": query.id, "question": query.text, "error": made.error},
                                   option=orjson.OPT_APPEND_NEWLINE))
    log.warning("generation failed for %d of %d questions (generator.max_error_rate=%s); see %s",
                len(failed), len(generations), max_error_rate, path)
    return [path]


def fail_on_generation_errors(generations: Sequence[Generation], max_error_rate: float, output_dir: Path) -> None:
    """Raise `GenerationFailed` when more questions failed to generate than `max_error_rate` allows."""
    failed = sum(made.error is not None for made in generations)
    if failed / len(generations) > max_error_rate:
        first = next(made.error for made in generations if made.error)
        raise GenerationFailed(
            f"generation failed for {failed} of {len(generations)} questions, more than generator.max_error_rate="
            f"{max_error_rate} allows (first error: {first}); the questions are in "
            f"{output_dir / 'generation_errors.jsonl'}; a rerun retries only them")


def fail_on_rewrite_errors(rewrites: Sequence[Rewrite] | None, max_failure_rate: float, output_dir: Path) -> None:
    """Raise `RewritingFailed` when more questions' rewrites failed than `max_failure_rate` allows: their questions
    were searched as asked, so the run would otherwise pass for one of the rewriter."""
    failed = [rewrite.error for rewrite in rewrites or () if rewrite.error is not None]
    if rewrites and len(failed) / len(rewrites) > max_failure_rate:
        raise RewritingFailed(
            f"query rewriting failed for {len(failed)} of {len(rewrites)} questions, more than "
            f"query.max_failure_rate={max_failure_rate} allows (first error: {failed[0]}); each question's error is "
            f"`query.error` in {output_dir / 'per_query.jsonl'}; a rerun retries only them")
