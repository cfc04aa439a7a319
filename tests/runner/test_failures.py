"""What a failed job does to its sweep, for `sweep.py -m` (the command line) and `Evaluation.sweep` (Python)."""

from __future__ import annotations

import logging

import pytest

from ragsweep.runner.failures import JudgingFailed, sweep_job_failed

LOGGER = "ragsweep.runner.failures"


def _fail(error: Exception, fail_fast: bool, command_line: bool) -> None:
    try:
        raise error
    except Exception as raised:  # as a caller meets it: while handling the job's error
        sweep_job_failed("k=3", raised, fail_fast, command_line)


@pytest.mark.parametrize(("error", "line"), [
    (JudgingFailed("9.0% of judge calls failed"), "9.0% of judge calls failed"),  # a failure a user can act on
    (RuntimeError("boom"), "RuntimeError('boom')"),  # anything else: its type too
])
def test_fail_fast_on_the_command_line_exits_1_with_one_line(error, line, capsys):
    with pytest.raises(SystemExit) as stopped:
        _fail(error, fail_fast=True, command_line=True)
    assert stopped.value.code == 1
    assert capsys.readouterr().err == f"ragsweep: error: job k=3 failed and fail_fast=true stops the sweep: {line}\n"


def test_fail_fast_from_python_raises_the_jobs_own_error(capsys):
    error = RuntimeError("boom")
    with pytest.raises(RuntimeError) as stopped:
        _fail(error, fail_fast=True, command_line=False)
    assert stopped.value is error and capsys.readouterr().err == ""  # nothing calls sys.exit


@pytest.mark.parametrize(("error", "command_line", "traceback"), [
    (JudgingFailed("9.0% of judge calls failed"), True, False),
    (RuntimeError("boom"), True, True),  # a bug or a broken component: its traceback in the job's log
    (RuntimeError("boom"), False, False),
])
def test_without_fail_fast_the_failure_is_logged_and_the_sweep_goes_on(error, command_line, traceback, caplog):
    with caplog.at_level(logging.ERROR, logger=LOGGER):
        _fail(error, fail_fast=False, command_line=command_line)  # returns: the sweep goes on
    [record] = caplog.records
    assert "k=3" in record.getMessage() and "the sweep goes on" in record.getMessage()
    assert (record.exc_info is not None) == traceback
