"""The span invariant on every option of conf/chunker/: each chunk's text is exactly the characters its
span names, in order, inside the document. The options come from the folder, so a new chunker YAML is
held to the invariant without editing this file."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsweep.data.sotu_qa import SotuQADataset
from ragsweep.types import Document
from tests.chunking.spans import assert_spans_point_back
from tests.conf_options import compose_option, instantiate_group, options

CHUNKERS = options("chunker")
# Token budgets small enough that the short random texts below are cut many times; keys an option does
# not have are left out, and a zero overlap stays zero.
SMALL = {"size": 12, "overlap": 3, "piece_size": 4}

texts = st.lists(
    st.one_of(st.text(max_size=6), st.sampled_from([".", "?", "!", " ", "\n", "\n\n", "\t", "é", "😀", "漢字"])),
    max_size=80,
).map("".join)


def _build(option: str, embedder, small: bool = False):
    """The chunker conf/chunker/<option>.yaml describes, handed `embedder` if it asks for one."""
    cfg = compose_option("chunker", option)
    if small:
        shrunk = [f"chunker.{key}={value}" for key, value in SMALL.items() if cfg.chunker.get(key)]
        cfg = compose_option("chunker", option, *shrunk)
    return instantiate_group(cfg, "chunker", embedder=embedder)


@pytest.fixture(scope="module")
def embedder():
    """conf/embedder/static.yaml, the fastest embedder, loaded once for every chunker that asks for one."""
    return instantiate_group(compose_option("embedder", "static", "embedder.progress=false"), "embedder")


@pytest.fixture(scope="module")
def sotu_documents() -> list[Document]:
    return list(SotuQADataset().load().documents.values())


@pytest.mark.parametrize("option", CHUNKERS)
def test_shipped_settings_keep_spans_exact_on_real_documents(option, embedder, sotu_documents):
    chunker = _build(option, embedder)
    documents_cut = 0
    for doc in sotu_documents:
        chunks = chunker.split(doc)
        assert_spans_point_back(chunks, doc)
        documents_cut += len(chunks) > 1
    assert documents_cut, f"chunker={option} cut none of the documents: the invariant was not exercised"


@pytest.mark.parametrize("option", CHUNKERS)
@pytest.mark.parametrize("text", ["", " ", "\n\n\t  \n"], ids=["empty", "space", "blank-lines"])
def test_empty_and_blank_documents(option, embedder, text):
    doc = Document("d", text)
    chunks = _build(option, embedder).split(doc)
    assert_spans_point_back(chunks, doc)
    if not text:
        assert chunks == []


@pytest.fixture(scope="module")
def small_chunkers(embedder) -> dict:
    return {option: _build(option, embedder, small=True) for option in CHUNKERS}


@pytest.mark.parametrize("option", CHUNKERS)
@given(text=texts)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_small_settings_keep_spans_exact_on_any_text(option, small_chunkers, text):
    doc = Document("d", text)
    assert_spans_point_back(small_chunkers[option].split(doc), doc)


def test_a_chunk_of_a_document_slices_its_text_when_read_and_pickles_only_it():
    """`Chunk.of` keeps no copy of its text: it is the document's slice, equal to a chunk given that text, and
    a pickled chunk carries its own text, not the document's."""
    import pickle

    from ragsweep.types import Chunk

    document = Document("d", "x" * 10_000 + "the answer" + "y" * 10_000)
    chunk = Chunk.of(document, 10_000, 10_010)
    assert chunk.text == "the answer" and chunk == Chunk("d", 10_000, 10_010, "the answer")
    assert hash(chunk) == hash(Chunk("d", 10_000, 10_010, "the answer"))
    again = pickle.loads(pickle.dumps(chunk))
    assert again == chunk and len(pickle.dumps(chunk)) < 200
    with pytest.raises(AttributeError):
        chunk.start = 3
