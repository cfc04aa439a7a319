"""Cores split among the ragsweep processes working on the machine: threaded models share what jobs on one core
leave."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import psutil
import pytest

from ragsweep.cores import FOLDER, THREADED, WORKING, CoreShare

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


@pytest.fixture
def share_of_four(tmp_path, monkeypatch):
    """A machine of 8 cores (as `os.cpu_count` says) where one other process runs a model, in a marker folder of
    this test's own (the suite's workers mark themselves in the system's): this process's share is 4 threads.
    torch starts on 1 thread and gets its own count back after."""
    import tempfile

    import torch

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    other, before = _holding(tmp_path / FOLDER, THREADED), torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield 4
    finally:
        other.kill(), other.wait()
        torch.set_num_threads(before)


@pytest.mark.slow
def test_torch_models_with_threads_null_run_on_the_process_share(share_of_four, tmp_path):
    """Embedding, re-ranking, judging and training a judge each take the share; a number set overrides it."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from ragsweep.embedding.minilm import MiniLMEmbedder, minilm_path
    from ragsweep.judging.base import Pair
    from ragsweep.judging.trained import TrainedJudge
    from ragsweep.rerank.cross_encoder import CrossEncoderReranker
    from ragsweep.types import Chunk, Hit

    def threads_after(work) -> int:
        torch.set_num_threads(1)
        work()
        return torch.get_num_threads()

    assert threads_after(lambda: MiniLMEmbedder(progress=False).encode(["a text"])) == share_of_four
    assert threads_after(lambda: MiniLMEmbedder(threads=3, progress=False).encode(["a text"])) == 3
    folder = tmp_path / "cross_encoder"
    AutoModelForSequenceClassification.from_pretrained(minilm_path(), num_labels=1).save_pretrained(folder)
    AutoTokenizer.from_pretrained(minilm_path()).save_pretrained(folder)
    chunks = [Chunk("d", 0, 6, "a text"), Chunk("d", 6, 12, "b text")]
    reranker = CrossEncoderReranker(str(folder), candidates=2)
    assert threads_after(lambda: reranker.rerank(["q"], chunks, [[Hit(0, 1.0), Hit(1, 0.5)]])) == share_of_four
    texts = ["In 1862 the Union held 3,000 miles of coast under blockade. Congress created the Department of "
             "Agriculture. The President said that emancipation would shorten the war.",
             "In 1941 Roosevelt spoke of four freedoms. He asked Congress for ships, planes and guns for Britain. "
             "The nation was not ready for war."]
    judge = TrainedJudge(dataset=texts,
                         examples=4, max_length=64, train_batch_size=4, progress=False, cache_dir=str(tmp_path))
    assert threads_after(judge.build) == share_of_four  # training
    assert threads_after(lambda: judge.judge([Pair("Roosevelt spoke of freedoms.", "He spoke of four freedoms.")])) \
        == share_of_four


def test_engines_that_fix_their_threads_keep_one_per_share(share_of_four, monkeypatch):
    """e5 and minilm_int8 fix their threads when made: each batch runs on the engine made for the share now."""
    from ragsweep.embedding import e5, minilm_int8

    made: list[tuple[str, int]] = []
    for module, name in ((e5, "_engine"), (minilm_int8, "_session")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name,
                            lambda threads, real=real, name=name: made.append((name, threads)) or real(threads))
    e5.E5Embedder(progress=False).encode(["a text"])
    minilm_int8.MiniLMInt8Embedder(threads=3, progress=False).encode(["a text"])
    assert made == [("_engine", share_of_four), ("_session", 3)]
