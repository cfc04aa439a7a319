"""Cores split among the ragsweep processes working on the machine: threaded models share what jobs on one core
leave."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import psutil

from ragsweep.cores import THREADED, WORKING, CoreShare

HOLD = ("import sys, time; from pathlib import Path; from ragsweep.cores import CoreShare\n"
        "share = CoreShare(Path(sys.argv[1]))\n"
        "with getattr(share, sys.argv[2])():\n    print('held', flush=True); time.sleep(60)")


def _holding(folder, kind):
    """A process holding `kind` ('threaded' or 'working') in `folder` until killed."""
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), kind], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    return process


def test_threaded_models_split_what_single_core_jobs_leave(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    share = CoreShare(tmp_path / "cores")
    assert share.threads() == 4  # nobody working: every core
    job, model = _holding(share.folder, "working"), _holding(share.folder, "threaded")
    try:
        assert share.threads() == 3  # the job's core taken, one model on the rest
        with share.threaded():
            assert share.threads() == 1  # (4 - 1) // 2
        with share.working():
            assert share.threads() == 2  # (4 - 2) // 1: this process is a job now
            with share.threaded():  # a job's model: the marker says threaded while it runs, working after
                assert (share.folder / str(os.getpid())).read_text().startswith(THREADED)
            assert (share.folder / str(os.getpid())).read_text().startswith(WORKING)
        assert not (share.folder / str(os.getpid())).exists()
    finally:
        job.kill(), model.kill(), job.wait(), model.wait()
    assert share.threads() == 4  # both gone: their markers are dead and removed
    assert [marker.name for marker in share.folder.iterdir()] == []


def test_markers_of_dead_processes_and_reused_pids_do_not_count(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    share = CoreShare(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (tmp_path / str(dead.pid)).write_text(f"{THREADED} 1.0")
        started = psutil.Process(other.pid).create_time()
        (tmp_path / str(other.pid)).write_text(f"{THREADED} {started - 100!r}")  # an earlier owner of its pid
        assert share.threads() == 4
        assert not (tmp_path / str(dead.pid)).exists() and not (tmp_path / str(other.pid)).exists()
        (tmp_path / str(other.pid)).touch()  # a marker with no kind or start time counts as threaded
        with share.threaded():
            assert share.threads() == 2
    finally:
        other.kill()


def test_the_marker_folder_is_shared_by_every_user(tmp_path):
    share = CoreShare(tmp_path / "cores")
    with share.working():
        mode = (tmp_path / "cores").stat().st_mode
    assert stat.S_IMODE(mode) == 0o1777  # anyone may add a marker, each removes only their own, as in /tmp
    (tmp_path / "cores").chmod(0o755)  # made by a program that did not know (an older ragsweep, a plain mkdir)
    with share.working():
        assert stat.S_IMODE((tmp_path / "cores").stat().st_mode) == 0o1777
