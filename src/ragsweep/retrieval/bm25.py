"""Lexical retrieval with BM25 (bm25s: sparse-matrix scoring, 28x faster than rank-bm25 here)."""

from __future__ import annotations

import hashlib
import re
from array import array
from collections.abc import Sequence

import numpy as np
from tqdm.auto import tqdm

from ragsweep.cache import StageCache
from ragsweep.identity import fingerprint
from ragsweep.stores.base import check_k, top_k
from ragsweep.types import Chunk, Hit

_WORD = re.compile(r"\w+")
PROGRESS_FROM = 10_000  # chunks from which indexing shows its progress bars


class BM25Retriever:
    """Okapi BM25 over lower-cased word tokens, English stopwords removed; the index is cached.

    Args:
        k1: Term-frequency saturation (> 0).
        b: Length normalisation, 0..1.
        method: bm25s variant: lucene, robertson, atire, bm25l or bm25+.
        stopwords: `en` or null.
        cache: The stage cache (passed in by the runner), where built indexes and their vocabularies are kept.
    """

    preload = ("bm25s",)  # libraries its work imports (runner.workers)

    def __init__(self, k1: float = 1.5, b: float = 0.75, method: str = "lucene", stopwords: str | None = "en",
                 cache: StageCache | None = None) -> None:
        if k1 <= 0 or not 0 <= b <= 1:
            raise ValueError(f"retriever.k1 must be > 0 and retriever.b in [0, 1], got k1={k1}, b={b}")
        if method not in ("lucene", "robertson", "atire", "bm25l", "bm25+"):
            raise ValueError(f"retriever.method must be lucene, robertson, atire, bm25l or bm25+, got {method!r}")
        if stopwords not in ("en", None):
            raise ValueError(f"retriever.stopwords must be 'en' or null, got {stopwords!r}")
        self.k1, self.b, self.method, self.stopwords = k1, b, method, stopwords
        self.cache = cache or StageCache("", enabled=False)
        self._model = None
        self._vocab: dict[str, int] = {}
        self._size = 0

    def _tokens(self, text: str) -> list[str]:
        from bm25s.stopwords import STOPWORDS_EN

        stop = STOPWORDS_EN if self.stopwords == "en" else ()
        return [word for word in _WORD.findall(text.lower()) if word not in stop]

    def index(self, chunks: Sequence[Chunk]) -> None:
        """Reads the index, with its vocabulary, from the cache when these texts were indexed before: hashing the
        texts is all a later index costs (a race's every round indexes again; words took 24 s at 100 k chunks)."""
        import bm25s

        digest = hashlib.sha256()
        for position, chunk in enumerate(chunks):
            digest.update(b"\0" + chunk.search_text.encode() if position else chunk.search_text.encode())
        key = fingerprint("bm25", digest.hexdigest(), self.k1, self.b, self.method, self.stopwords, "vocabulary")
        shown = len(chunks) >= PROGRESS_FROM

        def build() -> dict[str, np.ndarray]:
            vocab: dict[str, int] = {}
            ids, ends = array("i"), array("q")
            for chunk in tqdm(chunks, desc="bm25 words", unit="chunk", disable=not shown):
                ids.extend(vocab.setdefault(word, len(vocab)) for word in self._tokens(chunk.search_text))
                ends.append(len(ids))  # one flat array of word ids: no list of words kept per chunk
            model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
            corpus = _WordIds(np.frombuffer(ids, dtype=np.int32), np.frombuffer(ends, dtype=np.int64))
            model.index(bm25s.tokenization.Tokenized(ids=corpus, vocab=vocab), show_progress=shown)
            arrays = {name: np.asarray(model.scores[name]) for name in ("data", "indices", "indptr", "num_docs")}
            if model.nonoccurrence_array is not None:  # bm25l and bm25+ score absent terms too
                arrays["nonoccurrence"] = np.asarray(model.nonoccurrence_array)
            words = "\n".join(vocab).encode()  # a word (\w+) holds no newline; ids are positions in this list
            return {**arrays, "vocabulary": np.frombuffer(words, dtype=np.uint8)}

        arrays = self.cache.get_or_compute("bm25_index", key, build)
        words = arrays["vocabulary"].tobytes().decode()
        self._vocab = {word: position for position, word in enumerate(words.split("\n"))} if words else {}
        self._model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        self._model.scores = {**{n: arrays[n] for n in ("data", "indices", "indptr")}, "num_docs": int(arrays["num_docs"])}
        self._model.vocab_dict = self._vocab
        self._model.nonoccurrence_array = arrays.get("nonoccurrence")
        self._size = len(chunks)

    def close(self) -> None:
        """Let go of the index (searched again after the next `index`): a race keeps its configurations between
        rounds, and each would otherwise hold its corpus's index while the others search theirs."""
        self._model, self._vocab, self._size = None, {}, 0

    def search(self, questions: Sequence[str], k: int) -> list[list[Hit]]:
        check_k(k)
        results = []
        for question in questions:
            ids = [self._vocab[word] for word in self._tokens(question) if word in self._vocab]
            results.append(top_k(self._model.get_scores(ids) if ids else np.zeros(self._size), k))
        return results


class _WordIds(Sequence):
    """Each chunk's word ids as a list, made when bm25s reads it from one flat array (a list of Python ints per
    chunk, kept for a million chunks, would take gigabytes)."""

    def __init__(self, ids: np.ndarray, ends: np.ndarray) -> None:
        self.ids, self.starts, self.ends = ids, np.concatenate(([0], ends[:-1])), ends

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, position):
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        return self.ids[self.starts[position] : self.ends[position]].tolist()

    def __iter__(self):
        for start, end in zip(self.starts.tolist(), self.ends.tolist()):
            yield self.ids[start:end].tolist()
