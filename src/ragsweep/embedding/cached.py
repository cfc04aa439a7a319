"""Embeddings cached per text: a text embedded by any configuration is never embedded again by that embedder.

Each embedder has a folder of immutable shards (text hashes + vectors) in the stage cache, so whichever
chunker, store, k or reranker asks for a text, its vector is read, not computed.
"""

from __future__ import annotations

import binascii
import hashlib
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ragsweep.cache import StageCache, read_entry, write_entry
from ragsweep.identity import fingerprint
from ragsweep.embedding.base import Embedder, Role


def cached_embedder(embedder: Embedder, cache: StageCache, signature: Any) -> Embedder:
    """`embedder` with its outputs cached per text under `signature` (pass-through when the cache is off)."""
    if not cache.enabled:
        return embedder
    return CachedEmbedder(embedder, cache.root / "embeddings" / fingerprint(signature)[:32], cache)


class CachedEmbedder:
    """Embeds only texts its shard folder has not seen; counts texts as hits or misses.

    It remembers, per text, only where its vector lies (`ShardIndex`, one per folder in a process), not the
    vector: a call reads the shards its texts lie in and copies their rows into the one array it returns, so a
    million chunks' vectors are in memory once, as that array.
    """

    def __init__(self, embedder: Embedder, folder: Path, cache: StageCache) -> None:
        self.embedder = embedder
        self.folder = folder
        self.cache = cache
        self._index = shard_index(folder)

    @property
    def remote(self) -> bool:
        """The wrapped embedder's: whether it is an endpoint, whose tokens are priced."""
        return bool(getattr(self.embedder, "remote", False))

    @property
    def model_name(self) -> str | None:
        """The wrapped embedder's model, as `prices.models` names it."""
        return getattr(self.embedder, "model_name", None)

    def preflight(self) -> None:
        """The wrapped embedder's own check (loading its model), so a bad model fails before work."""
        check = getattr(self.embedder, "preflight", None)
        if check is not None:
            check()

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        if self.cache.bypassing and role == "query":
            return np.asarray(self.embedder.encode(list(texts), role=role), dtype=np.float32)
        started = time.perf_counter()
        try:
            return self._encode(texts, role)
        finally:
            self.cache.seconds["embedding"] += time.perf_counter() - started

    def fill(self, texts: Sequence[str], role: Role = "passage") -> int:
        """Embed into the cache the texts it lacks, sharing the work out with every other process embedding
        them (see `_embed_shared`), and return none of the vectors: a helper's share of another job's embedding.
        Returns how many texts this process embedded."""
        embedded = self.cache.misses["embeddings"]
        self._embed_missing(texts, role)
        return self.cache.misses["embeddings"] - embedded

    def absent(self, texts: Sequence[str], role: Role = "passage") -> list[str]:
        """The texts no shard holds yet, each once: what embedding `texts` would ask the embedder for."""
        keys = _keys(texts, role)
        self._index.load_new()
        missing = np.flatnonzero(self._index.rows(keys) < 0)
        return [texts[position] for position in np.sort(missing[np.unique(keys[missing], return_index=True)[1]])]

    def _encode(self, texts: Sequence[str], role: Role) -> np.ndarray:
        keys = self._embed_missing(texts, role)
        if not len(keys):
            return np.empty((0, 0), dtype=np.float32)
        vectors = self._index.gather(keys)
        return vectors if vectors is not None else self._encode(texts, role)

    def _embed_missing(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Embed the texts no shard holds yet; return every text's key."""
        keys = _keys(texts, role)
        self._index.load_new()
        absent = np.flatnonzero(self._index.rows(keys) < 0)
        missing = np.sort(absent[np.unique(keys[absent], return_index=True)[1]])  # each text once, where first asked
        if len(missing):
            self._embed_shared(texts, keys, missing, role)
        self.cache.hits["embeddings"] += len(keys) - len(missing)
        return keys

    def _embed_shared(self, texts: Sequence[str], keys: np.ndarray, missing: np.ndarray, role: Role) -> None:
        """Embed the texts at positions `missing` in shards of `cache.embedding_shard`, each under its own lock:
        every process that needs the same texts (the jobs of one chunking, on any node sharing the cache) takes
        the shards no one holds and writes each as it finishes, then waits for the shards others hold, and
        embeds any whose holder died without writing it. Each text is embedded once, by whichever process
        reached it first; a shard's texts are read only when it is embedded."""
        size = self.cache.embedding_shard
        shards = [missing[start : start + size] for start in range(0, len(missing), size)]
        waiting = []
        for shard in tqdm(shards, desc="embedding shards", unit="shard", disable=len(shards) < 2):
            if not self._embed_shard(texts, keys, shard, role, blocking=False):
                waiting.append(shard)
        for shard in waiting:
            self._embed_shard(texts, keys, shard, role, blocking=True)

    def _embed_shard(self, texts: Sequence[str], keys: np.ndarray, shard: np.ndarray, role: Role,
                     blocking: bool) -> bool:
        """Embed what of `shard` (positions in `texts`) no process has stored yet, under the shard's lock; False
        when another process holds it (without `blocking`)."""
        name = hashlib.sha256("".join(sorted(_hex(keys[shard]))).encode()).hexdigest()[:32]
        with self.cache.lock(name, blocking=blocking, folder=self.folder / "locks") as held:
            if not held:
                return False
            self._index.load_new()
            todo = shard[self._index.rows(keys[shard]) < 0]
            if len(todo):
                vectors = np.asarray(self.embedder.encode([texts[position] for position in todo.tolist()], role=role),
                                     dtype=np.float32)
                self._index.store(keys[todo], vectors)
                self.cache.misses["embeddings"] += len(todo)
            self.cache.hits["embeddings"] += len(shard) - len(todo)
        return True


def _keys(texts: Sequence[str], role: Role) -> np.ndarray:
    """Each text's cache key: the sha256 of its role and text."""
    return np.fromiter((hashlib.sha256(f"{role}\0{text}".encode()).digest() for text in texts), dtype=KEY,
                       count=len(texts))


class ShardIndex:
    """Where each text's vector lies among the shards of one embedder's folder: each text's key and its row
    (`KeyRows`), the shards read and the row each starts at. One per folder in a process, shared by every
    configuration embedding with that embedder, so a grid's or a race's jobs neither read every shard's keys
    again nor each hold 40 bytes a text of their own."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._keys = KeyRows()
        self._shards: list[Path] = []
        self._first_rows: list[int] = []  # the row each shard starts at
        self._next_row = 0
        self._loaded: set[str] = set()

    def __len__(self) -> int:
        return len(self._keys)

    def rows(self, keys: np.ndarray) -> np.ndarray:
        """Each key's row, or -1 for a text no shard read holds."""
        return self._keys.rows(keys)

    def gather(self, keys: np.ndarray) -> np.ndarray | None:
        """The keys' vectors, read shard by shard into one array; None when a shard could not be read (it is
        forgotten, so its texts count as missing)."""
        rows = self._keys.rows(keys)
        shard_of = np.searchsorted(self._first_rows, rows, side="right") - 1
        order = np.argsort(shard_of, kind="stable")
        vectors = None
        for positions in np.split(order, np.flatnonzero(np.diff(shard_of[order])) + 1):
            number = int(shard_of[positions[0]])
            arrays = read_entry(self._shards[number])
            if arrays is None:
                self._forget(number)
                return None
            if vectors is None:
                vectors = np.empty((len(keys), arrays["vectors"].shape[1]), dtype=np.float32)
            vectors[positions] = arrays["vectors"][rows[positions] - self._first_rows[number]]
        return vectors

    def load_new(self) -> None:
        """Read the keys of the shards written since the last call (by any process)."""
        if not self.folder.is_dir():
            return
        for path in sorted(self.folder.glob("*.npz")):
            if path.name in self._loaded:
                continue
            shard = read_entry(path)
            if shard is not None:
                self._remember(path, np.frombuffer(binascii.unhexlify("".join(shard["keys"].tolist())), dtype=KEY))
            self._loaded.add(path.name)

    def store(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Write a new shard of these texts' vectors."""
        path = self.folder / f"{uuid.uuid4().hex}.npz"
        write_entry(path, {"keys": np.array(_hex(keys)), "vectors": vectors})
        self._loaded.add(path.name)
        self._remember(path, keys)

    def _remember(self, path: Path, keys: np.ndarray) -> None:
        self._shards.append(path)
        self._first_rows.append(self._next_row)
        self._keys.add(keys, self._next_row)
        self._next_row += len(keys)

    def _forget(self, number: int) -> None:
        """Drop a shard that could not be read (deleted as corrupt), so that its texts are embedded again."""
        end = self._first_rows[number + 1] if number + 1 < len(self._shards) else self._next_row
        self._keys.drop(self._first_rows[number], end)


_SHARD_INDEXES: dict[str, ShardIndex] = {}


def shard_index(folder: Path) -> ShardIndex:
    """This process's index of an embedder's shard folder."""
    where = os.path.abspath(folder)
    if where not in _SHARD_INDEXES:
        _SHARD_INDEXES[where] = ShardIndex(folder)
    return _SHARD_INDEXES[where]


KEY = "S32"  # a text's key: the sha256 digest of its role and text


class KeyRows:
    """Keys to rows as two sorted arrays, searched in bulk: 40 bytes a text, where a dict of bytes to ints took
    about 190. Keys added since the last lookup are sorted among the others at the next one; a key added
    twice keeps its first row (two processes that embedded one text at once: the first shard read serves)."""

    def __init__(self) -> None:
        self._keys = np.empty(0, dtype=KEY)
        self._rows = np.empty(0, dtype=np.int64)
        self._added: list[tuple[np.ndarray, np.ndarray]] = []

    def __len__(self) -> int:
        self._merge()
        return len(self._keys)

    def add(self, keys: np.ndarray, first_row: int) -> None:
        """`keys` at rows first_row, first_row + 1, ..."""
        self._added.append((keys, np.arange(first_row, first_row + len(keys), dtype=np.int64)))

    def rows(self, keys: np.ndarray) -> np.ndarray:
        """Each key's row, or -1 for a key not added."""
        self._merge()
        if not len(self._keys):
            return np.full(len(keys), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        return np.where(self._keys[at] == keys, self._rows[at], -1)

    def drop(self, first_row: int, end_row: int) -> None:
        """Forget the keys at rows [first_row, end_row)."""
        self._merge()
        kept = (self._rows < first_row) | (self._rows >= end_row)
        self._keys, self._rows = self._keys[kept], self._rows[kept]

    def _merge(self) -> None:
        if not self._added:
            return
        keys = np.concatenate([added for added, _ in self._added])
        rows = np.concatenate([added for _, added in self._added])
        self._added = []
        order = np.argsort(keys, kind="stable")
        keys, rows = keys[order], rows[order]
        first = np.ones(len(keys), dtype=bool)
        first[1:] = keys[1:] != keys[:-1]
        keys, rows = keys[first], rows[first]
        new = self.rows(keys) < 0  # merged already: nothing pending
        at = np.searchsorted(self._keys, keys[new])
        self._keys, self._rows = np.insert(self._keys, at, keys[new]), np.insert(self._rows, at, rows[new])


def _hex(keys: np.ndarray) -> list[str]:
    """Each key as the 64 hex digits the shard files store."""
    digits = binascii.hexlify(keys.tobytes()).decode()
    return [digits[start : start + 64] for start in range(0, len(digits), 64)]
