"""A run says when other processes take the cores it is about to use."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

from ragsweep.runner import contention


def test_a_process_spinning_in_another_session_is_measured_and_said_once(caplog, monkeypatch):
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        assert contention.cores_busy_elsewhere(1.0) >= 0.5  # the spinner alone keeps one core busy
        monkeypatch.setattr(contention, "_said", False)
        with caplog.at_level(logging.WARNING):
            busy = contention.say_if_cores_are_taken()
            assert contention.say_if_cores_are_taken() is None  # once per process
    finally:
        spinner.kill()
        spinner.wait()
    assert busy >= 0.5
    assert caplog.text.count(f"of this machine's {os.cpu_count()} cores busy just now") == 1
    assert "as long as on an idle machine (logged as this run's cores_busy_elsewhere)" in caplog.text


def test_this_process_group_is_not_counted(monkeypatch):
    """The sweep's own workers share its process group: a spinner in it is left out."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        seconds = contention._cpu_seconds_elsewhere()
    finally:
        spinner.kill()
        spinner.wait()
    assert spinner.pid not in seconds and os.getpid() not in seconds
