"""The stage cache: content keys, atomic checksummed entries, per-text embeddings, cache=off."""

from __future__ import annotations

import numpy as np
import pytest

from ragsweep.cache import StageCache, fingerprint, read_entry, semantic_config, write_entry


class CountingEmbedder:
    """A deterministic stand-in that records what it was asked to embed (the cache is under test,
    not the model; real models are exercised in tests/embedding)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts, role="passage"):
        self.seen += list(texts)
        return np.array([[len(t), 1.0 if role == "query" else 0.0, sum(map(ord, t)) % 7] for t in texts], dtype=np.float32)


def test_get_or_compute_hits_after_the_first_miss(tmp_path):
    cache = StageCache(tmp_path)
    calls = []
    compute = lambda: calls.append(1) or {"x": np.arange(3)}  # noqa: E731
    first = cache.get_or_compute("chunks", "k1", compute)
    second = cache.get_or_compute("chunks", "k1", compute)
    assert calls == [1] and np.array_equal(first["x"], second["x"])
    assert cache.counts() == {"cache_hits_chunks": 1.0, "cache_misses_chunks": 1.0}


def test_a_truncated_entry_is_detected_and_rebuilt(tmp_path, caplog):
    path = tmp_path / "entry.npz"
    write_entry(path, {"x": np.arange(1000)})
    path.write_bytes(path.read_bytes()[:200])
    assert read_entry(path) is None
    assert not path.exists() and "corrupt" in caplog.text
    cache = StageCache(tmp_path)
    cache.save("s", "key", {"x": np.arange(5)})
    entry = tmp_path / "s" / "ke" / "key.npz"
    stored = entry.read_bytes()
    value = (4).to_bytes(8, "little")  # the last element of np.arange(5), stored uncompressed
    assert value in stored
    entry.write_bytes(stored.replace(value, (9).to_bytes(8, "little"), 1))
    rebuilt = cache.get_or_compute("s", "key", lambda: {"x": np.arange(5)})
    assert np.array_equal(rebuilt["x"], np.arange(5)) and cache.misses["s"] == 1


def test_writes_leave_no_temporary_files(tmp_path):
    write_entry(tmp_path / "a" / "b.npz", {"x": np.ones(3)})
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["b.npz"]


def test_each_text_is_embedded_once_per_embedder_across_instances(tmp_path):
    model = CountingEmbedder()
    first = StageCache(tmp_path).embedder(model, {"_target_": "m"})
    a = first.encode(["x", "yy", "x"])
    second = StageCache(tmp_path).embedder(model, {"_target_": "m"})  # e.g. another process
    b = second.encode(["yy", "zzz"])
    assert model.seen == ["x", "yy", "zzz"]
    assert np.array_equal(a[1], b[0]) and np.array_equal(a[0], a[2])
    second.encode(["yy"], role="query")  # a question is not a passage
    assert model.seen[-1] == "yy"
    assert second.cache.counts()["cache_hits_embeddings"] == 1.0


def test_speed_settings_do_not_change_keys_but_real_settings_do():
    base = {"_target_": "m", "batch_size": 8, "threads": 2, "progress": True, "size": 200}
    assert fingerprint(semantic_config(base)) == fingerprint(semantic_config({**base, "batch_size": 64, "threads": None}))
    assert fingerprint(semantic_config(base)) != fingerprint(semantic_config({**base, "size": 100}))


def test_cache_off_computes_every_time_and_writes_nothing(tmp_path):
    cache = StageCache(tmp_path / "c", enabled=False)
    calls = []
    for _ in range(2):
        cache.get_or_compute("s", "k", lambda: calls.append(1) or {"x": np.zeros(1)})
    model = CountingEmbedder()
    embedder = cache.embedder(model, {})
    embedder.encode(["a"]), embedder.encode(["a"])
    assert calls == [1, 1] and model.seen == ["a", "a"]
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("stage", ["chunks", "retrieval"])
def test_keys_change_with_every_input(stage):
    assert fingerprint(stage, "a", {"k": 1}) != fingerprint(stage, "a", {"k": 2}) != fingerprint(stage, "b", {"k": 1})


def test_latency_timing_embeds_questions_anew_but_reads_passages_from_the_cache(tmp_path):
    cache = StageCache(tmp_path)
    model = CountingEmbedder()
    embedder = cache.embedder(model, {"model": "counting"})
    embedder.encode(["a passage"], role="passage")
    embedder.encode(["a question"], role="query")
    model.seen.clear()
    with cache.embeddings_bypassed():
        embedder.encode(["a passage"], role="passage")
        embedder.encode(["a question"], role="query")
    assert model.seen == ["a question"]  # a new question is embedded; the index already holds passages
    embedder.encode(["a question"], role="query")
    assert model.seen == ["a question"]  # outside the block the cache answers again
