"""Embeddings cached per text: a text embedded by any configuration is never embedded again by that embedder.

Each embedder has a folder of immutable shards (text hashes + vectors) in the stage cache, so whichever
chunker, store, k or reranker asks for a text, its vector is read, not computed.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ragsweep.cache import StageCache, fingerprint, read_entry, write_entry
from ragsweep.embedding.base import Embedder, Role


def cached_embedder(embedder: Embedder, cache: StageCache, signature: Any) -> Embedder:
    """`embedder` with its outputs cached per text under `signature` (pass-through when the cache is off)."""
    if not cache.enabled:
        return embedder
    return CachedEmbedder(embedder, cache.root / "embeddings" / fingerprint(signature)[:32], cache)


class CachedEmbedder:
    """Embeds only texts its shard folder has not seen; counts texts as hits or misses."""

    def __init__(self, embedder: Embedder, folder: Path, cache: StageCache) -> None:
        self.embedder = embedder
        self.folder = folder
        self.cache = cache
        self._vectors: dict[str, np.ndarray] = {}
        self._loaded: set[str] = set()

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

    def _encode(self, texts: Sequence[str], role: Role) -> np.ndarray:
        keys = [hashlib.sha256(f"{role}\0{text}".encode()).hexdigest() for text in texts]
        self._load_new_shards()
        missing = {key: position for position, key in enumerate(keys) if key not in self._vectors}
        if missing:
            self._embed_shared(texts, list(missing.items()), role)
        self.cache.hits["embeddings"] += len(keys) - len(missing)
        if not keys:
            return np.empty((0, 0), dtype=np.float32)
        return np.stack([self._vectors[key] for key in keys])

    def _embed_shared(self, texts: Sequence[str], missing: list[tuple[str, int]], role: Role) -> None:
        """Embed the missing texts (key and position in `texts`) in shards of `cache.embedding_shard`, each under
        its own lock: every process that needs the same texts (the jobs of one chunking, on any node sharing the
        cache) takes the shards no one holds and writes each as it finishes, then waits for the shards others
        hold, and embeds any whose holder died without writing it. Each text is embedded once, by whichever
        process reached it first; a shard's texts are read only when it is embedded."""
        size = self.cache.embedding_shard
        shards = [dict(missing[start : start + size]) for start in range(0, len(missing), size)]
        waiting = []
        for shard in tqdm(shards, desc="embedding shards", unit="shard", disable=len(shards) < 2):
            if not self._embed_shard(texts, shard, role, blocking=False):
                waiting.append(shard)
        for shard in waiting:
            self._embed_shard(texts, shard, role, blocking=True)

    def _embed_shard(self, texts: Sequence[str], shard: dict[str, int], role: Role, blocking: bool) -> bool:
        """Embed what of `shard` no process has stored yet, under the shard's lock; False when another process
        holds it (without `blocking`)."""
        name = hashlib.sha256("".join(sorted(shard)).encode()).hexdigest()[:32]
        with self.cache.lock(name, blocking=blocking, folder=self.folder / "locks") as held:
            if not held:
                return False
            self._load_new_shards()
            todo = {key: position for key, position in shard.items() if key not in self._vectors}
            if todo:
                vectors = np.asarray(self.embedder.encode([texts[position] for position in todo.values()], role=role),
                                     dtype=np.float32)
                self._store_shard(list(todo), vectors)
                self.cache.misses["embeddings"] += len(todo)
            self.cache.hits["embeddings"] += len(shard) - len(todo)
        return True

    def _load_new_shards(self) -> None:
        if not self.folder.is_dir():
            return
        for path in sorted(self.folder.glob("*.npz")):
            if path.name in self._loaded:
                continue
            shard = read_entry(path)
            if shard is not None:
                self._vectors.update(zip(shard["keys"].tolist(), shard["vectors"]))
            self._loaded.add(path.name)

    def _store_shard(self, keys: list[str], vectors: np.ndarray) -> None:
        name = f"{uuid.uuid4().hex}.npz"
        write_entry(self.folder / name, {"keys": np.array(keys), "vectors": vectors})
        self._loaded.add(name)
        self._vectors.update(zip(keys, vectors))
