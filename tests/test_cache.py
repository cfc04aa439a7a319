"""The stage cache: content keys, atomic checksummed entries, per-text embeddings, cache=off."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from ragsweep.cache import StageCache, read_entry, write_entry
from ragsweep.identity import fingerprint, semantic_config
from ragsweep.embedding.cached import cached_embedder


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
    first = cached_embedder(model, StageCache(tmp_path), {"_target_": "m"})
    a = first.encode(["x", "yy", "x"])
    second = cached_embedder(model, StageCache(tmp_path), {"_target_": "m"})  # e.g. another process
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
    embedder = cached_embedder(model, cache, {})
    embedder.encode(["a"]), embedder.encode(["a"])
    assert calls == [1, 1] and model.seen == ["a", "a"]
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("stage", ["chunks", "retrieval"])
def test_keys_change_with_every_input(stage):
    assert fingerprint(stage, "a", {"k": 1}) != fingerprint(stage, "a", {"k": 2}) != fingerprint(stage, "b", {"k": 1})


def test_latency_timing_embeds_questions_anew_but_reads_passages_from_the_cache(tmp_path):
    cache = StageCache(tmp_path)
    model = CountingEmbedder()
    embedder = cached_embedder(model, cache, {"model": "counting"})
    embedder.encode(["a passage"], role="passage")
    embedder.encode(["a question"], role="query")
    model.seen.clear()
    with cache.embeddings_bypassed():
        embedder.encode(["a passage"], role="passage")
        embedder.encode(["a question"], role="query")
    assert model.seen == ["a question"]  # a new question is embedded; the index already holds passages
    embedder.encode(["a question"], role="query")
    assert model.seen == ["a question"]  # outside the block the cache answers again


def _entries(positions, keys, log=None, fail=()):
    """One entry per position; a key in `fail` gives an entry marked failed (error set)."""
    if log is not None:
        with open(log, "a") as out:
            out.writelines(f"{keys[i]}\n" for i in positions)
    return [{"value": np.array(keys[i]), "error": np.array("boom" if keys[i] in fail else "")} for i in positions]


def test_each_entry_is_computed_once_and_failures_are_not_stored(tmp_path):
    cache = StageCache(tmp_path)
    keys = ["a", "b", "a", "c"]  # two questions with the same prompt share one entry
    asked = []
    compute = lambda positions: asked.append([keys[i] for i in positions]) or _entries(positions, keys, fail={"c"})  # noqa: E731
    ok = lambda arrays: not str(arrays["error"])  # noqa: E731
    first = cache.get_or_compute_each("answers", keys, compute, batch=2, storable=ok)
    assert [str(e["value"]) for e in first] == keys
    assert asked == [["a", "b"], ["c"]]
    again = cache.get_or_compute_each("answers", keys, compute, batch=2, storable=ok)
    assert [str(e["value"]) for e in again] == keys
    assert asked[2:] == [["c"]]  # only the failed one is asked again
    assert cache.counts() == {"cache_hits_answers": 2.0, "cache_misses_answers": 4.0}


def _fill(root, keys, log):
    import time

    def compute(positions):
        time.sleep(0.05 * len(positions))
        return _entries(positions, keys, log)

    StageCache(root).get_or_compute_each("answers", keys, compute, batch=3, progress=False)


def test_parallel_processes_compute_each_entry_once(tmp_path):
    """Two jobs needing the same 24 entries (one in reverse order) split the work: every entry is
    computed exactly once in total, and neither job waits for the other's batches before its own."""
    import multiprocessing

    keys = [f"key{i:02d}" for i in range(24)]
    log = tmp_path / "computed.txt"
    context = multiprocessing.get_context("fork")
    jobs = [context.Process(target=_fill, args=(tmp_path / "cache", order, log)) for order in (keys, keys[::-1])]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(60)
        assert job.exitcode == 0
    computed = log.read_text().split()
    assert sorted(computed) == keys  # each once: no entry computed by both jobs
    cache = StageCache(tmp_path / "cache")
    entries = cache.get_or_compute_each("answers", keys, lambda positions: 1 / 0, progress=False)
    assert [str(e["value"]) for e in entries] == keys


def test_each_entry_without_a_cache_is_computed_and_not_stored(tmp_path):
    cache = StageCache(tmp_path, enabled=False)
    keys = ["a", "b"]
    entries = cache.get_or_compute_each("answers", keys, lambda positions: _entries(positions, keys), progress=False)
    assert [str(e["value"]) for e in entries] == keys and not any(tmp_path.iterdir())


def _race(root, start, log, rounds):
    """One racer with locks off: wait for the start, compute the shared entry, then rewrite it `rounds` times."""
    big = lambda: {"x": np.arange(2_000_000, dtype=np.float64), "tag": np.array("same")}  # noqa: E731
    cache = StageCache(root, locks=False)
    start.wait()
    entry = cache.get_or_compute("index", "shared", lambda: open(log, "a").write("computed\n") and big())
    for _ in range(rounds):
        cache.save("index", "shared", big())
    assert np.array_equal(entry["x"], big()["x"])


def _read_while_racing(root, start, stop, log):
    """Read the shared entry as fast as possible; log every read that was not a whole, verified entry."""
    import time

    start.wait()
    path = StageCache(root)._path("index", "shared")
    deadline = time.monotonic() + 120
    while not stop.is_set() and time.monotonic() < deadline:
        if path.exists():
            entry = read_entry(path)
            with open(log, "a") as out:
                out.write("whole\n" if entry is not None and entry["x"].shape == (2_000_000,) else "broken\n")


def test_racing_processes_without_locks_agree_and_readers_never_see_half_an_entry(tmp_path):
    """Four processes (nodes of a cluster, on a mount without locks) compute the same entry at once and
    keep rewriting it while two readers poll it: every racer gets the same content, readers only ever
    see whole entries that pass their checksum, and no lock or temporary file is left behind.
    Writing the entry in place instead of renaming a finished temporary file fails this test."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    start, stop = context.Barrier(6), context.Event()
    computed, reads = tmp_path / "computed.txt", tmp_path / "reads.txt"
    racers = [context.Process(target=_race, args=(tmp_path / "cache", start, computed, 15)) for _ in range(4)]
    readers = [context.Process(target=_read_while_racing, args=(tmp_path / "cache", start, stop, reads), daemon=True)
               for _ in range(2)]
    for process in racers + readers:
        process.start()
    try:
        for racer in racers:
            racer.join(120)
    finally:
        stop.set()
        for reader in readers:
            reader.join(30)
    assert [racer.exitcode for racer in racers] == [0] * 4
    assert computed.read_text().count("computed") >= 2  # they raced: without locks nobody waited
    outcomes = reads.read_text().split()
    assert outcomes.count("whole") > 10 and "broken" not in outcomes
    stored = read_entry(tmp_path / "cache" / "index" / "sh" / "shared.npz")
    assert stored is not None and np.array_equal(stored["x"], np.arange(2_000_000, dtype=np.float64))
    leftovers = [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.suffix != ".npz"]
    assert leftovers == [] and not (tmp_path / "cache" / ".locks").exists()


def _embed_without_locks(root, start, texts, out):
    start.wait()
    vectors = cached_embedder(CountingEmbedder(), StageCache(root, locks=False), {"_target_": "m"}).encode(texts)
    np.save(out, vectors)


def test_embedders_racing_without_locks_store_the_same_vectors(tmp_path):
    """Three processes embedding the same texts with locks off each write a shard; a later reader gets
    every text from those shards, equal to what each racer computed, and embeds nothing."""
    import multiprocessing

    texts = [f"text {i}" for i in range(50)]
    context = multiprocessing.get_context("fork")
    start = context.Barrier(3)
    outs = [tmp_path / f"racer{i}.npy" for i in range(3)]
    racers = [context.Process(target=_embed_without_locks, args=(tmp_path / "cache", start, texts, out))
              for out in outs]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(60)
        assert racer.exitcode == 0
    model = CountingEmbedder()
    later = cached_embedder(model, StageCache(tmp_path / "cache"), {"_target_": "m"}).encode(texts)
    assert model.seen == []
    for out in outs:
        assert np.array_equal(np.load(out), later)


def test_a_filesystem_that_refuses_locks_costs_a_warning_not_the_entry(tmp_path, monkeypatch, caplog):
    """Some network mounts answer flock with ENOLCK. No such mount exists on this machine, so the
    refusal is injected at the system call (fcntl.flock); the cache must go on without the lock."""
    import errno
    import fcntl

    def refuse(handle, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", refuse)
    cache = StageCache(tmp_path)
    entry = cache.get_or_compute("chunks", "k", lambda: {"x": np.arange(3)})
    assert np.array_equal(entry["x"], np.arange(3)) and "no file locks" in caplog.text
    assert np.array_equal(cache.get_or_compute("chunks", "k", lambda: 1 / 0)["x"], np.arange(3))


def test_fresh_stages_are_computed_again_and_leave_the_stored_entries_alone(tmp_path):
    stored = StageCache(tmp_path)
    stored.get_or_compute("retrieval", "k", lambda: {"search_ms": np.array([5.0])})
    stored.get_or_compute_each("answers", ["a"], lambda positions: [{"latency_ms": np.array(7.0)}])
    fresh = StageCache.from_settings({"dir": tmp_path, "enabled": True, "fresh": ["retrieval", "answers"]})
    again = fresh.get_or_compute("retrieval", "k", lambda: {"search_ms": np.array([9.0])})
    answers = fresh.get_or_compute_each("answers", ["a"], lambda positions: [{"latency_ms": np.array(3.0)}])
    assert again["search_ms"].tolist() == [9.0] and float(answers[0]["latency_ms"]) == 3.0  # timed anew
    assert fresh.misses == {"retrieval": 1, "answers": 1} and not fresh.hits
    assert StageCache(tmp_path).get_or_compute("retrieval", "k", lambda: {})["search_ms"].tolist() == [5.0]
    assert float(StageCache(tmp_path).load("answers", "a")["latency_ms"]) == 7.0  # what a plain run reads stays
    assert fresh.get_or_compute("chunks", "c", lambda: {"x": np.array(1)}) and StageCache(tmp_path).load("chunks", "c")


class SlowEmbedder(CountingEmbedder):
    """The stand-in taking time per text, and appending what it embeds to a file shared by processes (or, with
    `hang`, never returning from its first call, as a process killed mid-shard)."""

    def __init__(self, log, hang: bool = False) -> None:
        super().__init__()
        self.log, self.hang = log, hang

    def encode(self, texts, role="passage"):
        if self.hang:
            with open(self.log.with_suffix(".started"), "w"):
                pass
            time.sleep(600)
        time.sleep(0.02 * len(texts))
        with open(self.log, "a") as out:
            out.write("".join(f"{os.getpid()} {text}\n" for text in texts))
        return super().encode(texts, role)


def _embed_in_shards(root, start, texts, log, out, hang=False):
    cache = StageCache(root, embedding_shard=4)
    embedder = cached_embedder(SlowEmbedder(log, hang), cache, {"_target_": "m"})
    if start is not None:
        start.wait()
    np.save(out, embedder.encode(texts))
    np.save(out.with_suffix(".counts.npy"), [cache.hits["embeddings"], cache.misses["embeddings"]])


def test_processes_needing_one_embedding_share_its_shards_and_embed_each_text_once(tmp_path):
    """Two processes (two jobs of one chunking, on two nodes sharing the cache) embedding the same 40 texts in
    shards of 4 each take the shards no one holds: both embed, no text is embedded twice, and both get every
    vector, equal to a single process's."""
    import multiprocessing

    texts = [f"text {i:02d}" for i in range(40)]
    context = multiprocessing.get_context("fork")
    start, log = context.Barrier(2), tmp_path / "embedded.txt"
    outs = [tmp_path / f"job{i}.npy" for i in range(2)]
    jobs = [context.Process(target=_embed_in_shards, args=(tmp_path / "cache", start, texts, log, out)) for out in outs]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(60)
        assert job.exitcode == 0
    embedded = [line.split(" ", 1) for line in log.read_text().splitlines()]
    assert sorted(text for _, text in embedded) == texts  # each text once, in all
    assert len({pid for pid, _ in embedded}) == 2  # by both processes
    alone = cached_embedder(CountingEmbedder(), StageCache(tmp_path / "alone"), {"_target_": "m"}).encode(texts)
    for out in outs:
        assert np.array_equal(np.load(out), alone)
    counts = [np.load(out.with_suffix(".counts.npy")).tolist() for out in outs]
    assert sum(misses for _, misses in counts) == 40 and all(hits + misses == 40 for hits, misses in counts)


def test_a_shard_whose_process_died_is_embedded_by_the_process_waiting_for_it(tmp_path):
    """A process killed while it holds a shard leaves no vectors for it; another process needing the same texts
    embeds every other shard, waits for that one, and then embeds it itself once the lock is released."""
    import multiprocessing

    texts = [f"text {i:02d}" for i in range(12)]
    context = multiprocessing.get_context("fork")
    log, outs = tmp_path / "embedded.txt", [tmp_path / "killed.npy", tmp_path / "survivor.npy"]
    killed = context.Process(target=_embed_in_shards, args=(tmp_path / "cache", None, texts, log, outs[0], True))
    killed.start()
    deadline = time.monotonic() + 30
    while not log.with_suffix(".started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    survivor = context.Process(target=_embed_in_shards, args=(tmp_path / "cache", None, texts, log, outs[1]))
    survivor.start()
    time.sleep(1.0)  # the survivor embeds the two free shards, then waits on the held one
    assert survivor.is_alive()
    killed.kill()
    killed.join(10)
    survivor.join(60)
    assert survivor.exitcode == 0
    embedded = [line.split(" ", 1) for line in log.read_text().splitlines()]
    assert sorted(text for _, text in embedded) == texts and {pid for pid, _ in embedded} == {str(survivor.pid)}
    assert np.load(outs[1]).shape == (12, 3)


class CountedTexts(list):
    """A list of texts that counts how many are read at once at most (one shard's, not the corpus)."""

    def __init__(self, texts):
        super().__init__(texts)
        self.reads = 0

    def __getitem__(self, position):
        self.reads += 1
        return super().__getitem__(position)


def test_a_cold_embedding_reads_each_missing_text_when_its_shard_is_embedded(tmp_path):
    """Texts are hashed as they stream past and read again one shard at a time, so a lazily sliced corpus
    (`ChunkTexts`) is never held whole: 10 texts, shards of 4, each read once by position."""
    texts = CountedTexts([f"text {i}" for i in range(10)])
    model = CountingEmbedder()
    vectors = cached_embedder(model, StageCache(tmp_path, embedding_shard=4), {"_target_": "m"}).encode(texts)
    assert texts.reads == 10 and model.seen == list(texts)
    assert np.array_equal(vectors, cached_embedder(CountingEmbedder(), StageCache(tmp_path / "b"),
                                                   {"_target_": "m"}).encode(list(texts)))


def test_an_embedder_remembers_where_vectors_lie_not_the_vectors(tmp_path):
    """Vectors are read from their shards into the one array a call returns: the embedder holds no array
    between calls, and a shard that went bad since it was read is embedded again (its texts count as missed)."""
    texts = [f"text {i}" for i in range(10)]
    model = CountingEmbedder()
    cached = cached_embedder(model, StageCache(tmp_path, embedding_shard=4), {"_target_": "m"})
    first = cached.encode(texts)
    held = [*vars(cached).values(), *vars(cached._index).values(), *vars(cached._index._keys).values()]
    assert not [value for value in held if isinstance(value, np.ndarray) and value.dtype.kind == "f"]
    assert len(cached._index) == 10
    again = cached.encode(texts[::-1])
    assert np.array_equal(again, first[::-1]) and len(model.seen) == 10
    shard = sorted(cached.folder.glob("*.npz"))[0]
    lost = len(read_entry(shard)["keys"])
    shard.write_bytes(b"not a shard")
    assert np.array_equal(cached.encode(texts), first)
    assert len(model.seen) == 10 + lost and cached.cache.misses["embeddings"] == 10 + lost


def test_the_embedders_of_one_folder_share_one_index_in_a_process(tmp_path, monkeypatch):
    """A grid's or a race's configurations embedding with one embedder read its shards' keys once and hold one
    index of them, not one each."""
    import ragsweep.embedding.cached as cached_module

    texts = [f"text {i}" for i in range(10)]
    first = cached_embedder(CountingEmbedder(), StageCache(tmp_path, embedding_shard=4), {"_target_": "m"})
    first.encode(texts)
    reads = []
    monkeypatch.setattr(cached_module, "read_entry", lambda path: reads.append(path) or read_entry(path))
    model = CountingEmbedder()
    second = cached_embedder(model, StageCache(tmp_path, embedding_shard=4), {"_target_": "m"})
    assert second._index is first._index and len(second._index) == 10
    second.encode(texts[:3])
    assert model.seen == [] and len(reads) == 1  # the one shard holding the three vectors, not every shard's keys
    other = cached_embedder(CountingEmbedder(), StageCache(tmp_path, embedding_shard=4), {"_target_": "other"})
    assert other._index is not first._index
