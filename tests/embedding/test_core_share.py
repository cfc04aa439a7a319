"""Cores split among the processes that are embedding right now (joblib workers)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from ragsweep.embedding.base import CoreShare


def test_the_share_counts_live_embedding_processes_and_forgets_dead_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    share = CoreShare(tmp_path)
    tmp_path.mkdir(exist_ok=True)
    assert share.threads() == 4  # nobody embedding: every core
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        (tmp_path / str(other.pid)).touch()
        (tmp_path / str(dead.pid)).touch()
        with share.embedding():
            assert share.threads() == 2  # this process and `other`; the dead one does not count
        assert not (tmp_path / str(dead.pid)).exists()  # and its marker is cleared
        assert share.threads() == 4  # `other` alone
        assert not (tmp_path / str(os.getpid())).exists()
    finally:
        other.kill()


@pytest.mark.slow
def test_sliced_encoding_equals_one_plain_encode(chroma_general):
    from ragsweep.embedding.minilm import MiniLMEmbedder, minilm_path
    from ragsweep.embedding.sentence_transformers import _load

    texts = [query.text for query in chroma_general.queries[:150]]
    sliced = MiniLMEmbedder(progress=False).encode(texts, role="query")
    plain = _load(minilm_path(), os.cpu_count() or 1).encode(texts, batch_size=8, normalize_embeddings=True)
    assert sliced.dtype == np.float32 and sliced.shape == plain.shape
    assert np.abs(sliced - plain).max() < 1e-6  # same batches, so the same vectors up to float noise
