"""Every shipped embedder runs offline, returns unit vectors and ranks the matching text first."""

from __future__ import annotations

import numpy as np
import pytest

from ragsweep.embedding.e5 import E5Embedder
from ragsweep.embedding.minilm import MiniLMEmbedder
from ragsweep.embedding.minilm_int8 import MiniLMInt8Embedder
from ragsweep.embedding.sentence_transformers import SentenceTransformerEmbedder
from ragsweep.embedding.static import StaticEmbedder

PASSAGES = [
    "The cat sat on the mat all afternoon.",
    "Stock markets fell sharply on Monday after the rate decision.",
    "Photosynthesis lets plants turn sunlight into sugar.",
    "The orchestra rehearsed the symphony for the concert.",
]
QUESTIONS = ["Where was the cat sitting?", "Why did shares drop?", "How do plants make food from light?"]

EMBEDDERS = {
    "minilm": (lambda: MiniLMEmbedder(batch_size=2, progress=False), 384),
    "minilm_int8": (lambda: MiniLMInt8Embedder(batch_size=2, progress=False), 384),
    "e5": (lambda: E5Embedder(batch_size=2, progress=False), 384),
    "static": (lambda: StaticEmbedder(progress=False), 64),
}


@pytest.mark.parametrize("name", sorted(EMBEDDERS))
def test_unit_vectors_and_sensible_ranking(name):
    build, dim = EMBEDDERS[name]
    embedder = build()
    passages = embedder.encode(PASSAGES)
    questions = embedder.encode(QUESTIONS, role="query")
    assert passages.shape == (4, dim) and questions.shape == (3, dim)
    assert passages.dtype == np.float32
    assert np.linalg.norm(passages, axis=1) == pytest.approx(np.ones(4), abs=1e-4)
    assert (questions @ passages.T).argmax(axis=1).tolist() == [0, 1, 2]


def test_int8_minilm_ranks_like_minilm():
    texts = PASSAGES + QUESTIONS + ["A long sentence about taxes, budgets and deficits " * 20]
    full = MiniLMEmbedder(progress=False).encode(texts)
    int8 = MiniLMInt8Embedder(progress=False).encode(texts)
    cosine = (full * int8).sum(axis=1)
    assert cosine.min() > 0.97  # same model, int8 weights; measured 0.98-0.99
    assert np.array_equal(np.argsort(-(full[4:7] @ full[:4].T), axis=1), np.argsort(-(int8[4:7] @ int8[:4].T), axis=1))


def test_e5_prefixes_queries_differently_from_passages():
    embedder = E5Embedder(progress=False)
    assert not np.allclose(embedder.encode(["a question"]), embedder.encode(["a question"], role="query"))


def test_sentence_transformers_loads_a_local_model_and_applies_prefixes():
    from ragsweep.embedding.minilm import minilm_path

    plain = SentenceTransformerEmbedder(minilm_path(), progress=False)
    prefixed = SentenceTransformerEmbedder(minilm_path(), query_prefix="query: ", progress=False)
    assert np.allclose(plain.encode(["hello"]), MiniLMEmbedder(progress=False).encode(["hello"]), atol=1e-5)
    assert not np.allclose(plain.encode(["hello"], role="query"), prefixed.encode(["hello"], role="query"))


def test_sentence_transformers_unknown_model_fails_in_preflight():
    with pytest.raises(OSError, match=r"embedder.model=/no/such/model cannot be loaded offline"):
        SentenceTransformerEmbedder("/no/such/model").preflight()


@pytest.mark.slow
def test_sliced_encoding_equals_one_plain_encode(chroma_general):
    from ragsweep.embedding.minilm import minilm_path
    from ragsweep.embedding.sentence_transformers import _load

    texts = [query.text for query in chroma_general.queries[:150]]
    sliced = MiniLMEmbedder(progress=False).encode(texts, role="query")
    plain = _load(minilm_path()).encode(texts, batch_size=8, normalize_embeddings=True)
    assert sliced.dtype == np.float32 and sliced.shape == plain.shape
    assert np.abs(sliced - plain).max() < 1e-6  # same batches, so the same vectors up to float noise
