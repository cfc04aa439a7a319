"""Second-stage reranking."""

from __future__ import annotations

import pytest

from ragsweep.embedding.minilm import MiniLMEmbedder
from ragsweep.rerank.cross_encoder import CrossEncoderReranker
from ragsweep.rerank.embedding import EmbeddingReranker
from ragsweep.rerank.none import NoReranker
from ragsweep.types import Chunk, Hit
from tests.cross_encoder import build_cross_encoder

TEXTS = ["Bananas are yellow fruit.", "The senate passed the budget bill.", "Volcanoes erupt molten rock."]
CHUNKS = [Chunk("d", i, i + 1, text) for i, text in enumerate(TEXTS)]
WRONG_ORDER = [[Hit(0, 0.9), Hit(2, 0.8), Hit(1, 0.7)]]


def test_embedding_reranker_moves_the_matching_chunk_up():
    reranker = EmbeddingReranker(MiniLMEmbedder(progress=False), candidates=3)
    (hits,) = reranker.rerank(["What did lawmakers approve?"], CHUNKS, WRONG_ORDER)
    assert hits[0].index == 1 and sorted(h.index for h in hits) == [0, 1, 2]


def test_no_reranker_keeps_the_order():
    assert NoReranker().rerank(["q"], CHUNKS, WRONG_ORDER) == WRONG_ORDER


@pytest.fixture(scope="module")
def local_cross_encoder(tmp_path_factory):
    return build_cross_encoder(tmp_path_factory.mktemp("cross_encoder"))


def test_cross_encoder_orders_candidates_by_its_scores(local_cross_encoder):
    from sentence_transformers import CrossEncoder

    reranker = CrossEncoderReranker(local_cross_encoder, candidates=3)
    reranker.preflight()
    (hits,) = reranker.rerank(["budget"], CHUNKS, WRONG_ORDER)
    expected = CrossEncoder(local_cross_encoder, device="cpu").predict([("budget", t) for t in TEXTS]).tolist()
    assert [h.index for h in hits] == sorted(range(3), key=lambda i: -expected[i])
    assert [h.score for h in hits] == pytest.approx(sorted(expected, reverse=True), abs=1e-5)


def test_cross_encoder_that_cannot_load_fails_in_preflight():
    with pytest.raises(OSError, match=r"reranker.model=/missing/model cannot be loaded .*pass a local folder"):
        CrossEncoderReranker("/missing/model").preflight()
