"""Each chunker class on its own: coverage, parity with the references, whole sentences, refused settings.
The span invariant of every conf/chunker/ option is in test_chunker_contract.py; here it also runs on
settings no YAML ships (no overlap, overlap in sentences, lengths in characters)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsweep.chunking.fixed import FixedTokenChunker
from ragsweep.chunking.recursive import RecursiveChunker
from ragsweep.chunking.sentence import SentenceChunker
from ragsweep.tokenizer import Tokenizer
from ragsweep.types import Document
from tests.chunking.spans import assert_spans_point_back

UNSHIPPED_SETTINGS = [
    FixedTokenChunker(size=5, overlap=0),
    RecursiveChunker(size=12, overlap=4),
    RecursiveChunker(size=20, overlap=5, length="chars"),
    SentenceChunker(size=15, overlap=1),
]

# Random unicode, with sentence punctuation and whitespace runs frequent enough to exercise splitting.
texts = st.lists(
    st.one_of(st.text(max_size=6), st.sampled_from([".", "?", "!", " ", "\n", "\n\n", "\t", "é", "😀", "漢字"])),
    max_size=80,
).map("".join)


@pytest.mark.parametrize("chunker", UNSHIPPED_SETTINGS, 
                         ids=lambda c: f"{type(c).__name__}-{c.size}-{c.overlap}")
@given(text=texts)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_spans_point_back_into_the_document(chunker, text):
    doc = Document("d", text)
    assert_spans_point_back(chunker.split(doc), doc)


@pytest.mark.parametrize("chunker", [RecursiveChunker(size=10), SentenceChunker(size=10)],
                         ids=lambda c: type(c).__name__)
@pytest.mark.parametrize("text", [" ", "\n\n\t  \n"])
def test_whitespace_documents_give_no_chunk(chunker, text):
    assert chunker.split(Document("d", text)) == []  # nothing worth embedding


@given(text=texts)
@settings(max_examples=150, deadline=None)
def test_fixed_windows_cover_every_character(text):
    chunks = FixedTokenChunker(size=6, overlap=2).split(Document("d", text))
    covered = set()
    for chunk in chunks:
        covered.update(range(chunk.start, chunk.end))
    assert covered == set(range(len(text)))


@given(text=st.text(alphabet=st.sampled_from("ab cd.\n?!xyz"), max_size=300))
@settings(max_examples=100, deadline=None)
def test_recursive_matches_langchain(text):
    """LangChain's RecursiveCharacterTextSplitter (keep_separator='start') is the independent reference."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    tokenizer = Tokenizer()
    reference = RecursiveCharacterTextSplitter(
        chunk_size=10, chunk_overlap=3, keep_separator="start", length_function=tokenizer.count,
        separators=["\n\n", "\n", ".", "?", "!", " ", ""],
    )
    ours = RecursiveChunker(size=10, overlap=3)
    assert [chunk.text for chunk in ours.split(Document("d", text))] == reference.split_text(text)


def test_recursive_matches_langchain_on_the_benchmark_corpora(chroma_general):
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    tokenizer = Tokenizer()
    reference = RecursiveCharacterTextSplitter(
        chunk_size=200, chunk_overlap=0, keep_separator="start", length_function=tokenizer.count,
        separators=["\n\n", "\n", ".", "?", "!", " ", ""],
    )
    for doc in chroma_general.documents.values():
        assert [c.text for c in RecursiveChunker(200, 0).split(doc)] == reference.split_text(doc.text), doc.id


@given(text=st.text(alphabet=st.characters(max_codepoint=127), max_size=400))
@settings(max_examples=100, deadline=None)
def test_fixed_equals_decoded_token_windows_on_ascii(text):
    """On ASCII no token splits a character, so a window's span text equals tiktoken's decode of it."""
    tokenizer = Tokenizer()
    tokens = tokenizer.encode(text)
    expected, first = [], 0
    while first < len(tokens):  # chunking_evaluation's split_text_on_tokens, size 7, overlap 3
        expected.append(tokenizer._encoding.decode(tokens[first : first + 7]))
        if first + 7 >= len(tokens):
            break
        first += 4
    assert [c.text for c in FixedTokenChunker(size=7, overlap=3).split(Document("d", text))] == expected


def test_sentence_chunker_keeps_sentences_whole():
    # cl100k tokens: "One two." 3, "Three four five?" 4, "Six!" 2, "Seven eight nine ten." 5
    text = "One two. Three four five? Six!  Seven eight nine ten."
    chunks = SentenceChunker(size=7, overlap=0).split(Document("d", text))
    assert [c.text for c in chunks] == ["One two. Three four five?", "Six!  Seven eight nine ten."]  # 3+4, 2+5
    # overlap=1 restarts at the last sentence of each chunk: 3+4, then 4+2 (+5 would exceed 7), then 2+5
    overlapping = SentenceChunker(size=7, overlap=1).split(Document("d", text))
    assert [c.text for c in overlapping] == ["One two. Three four five?", "Three four five? Six!", "Six!  Seven eight nine ten."]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: FixedTokenChunker(size=10, overlap=10), "chunker.overlap (10) must be smaller than chunker.size (10)"),
        (lambda: FixedTokenChunker(size=0, overlap=0), "chunker.size must be > 0"),
        (lambda: RecursiveChunker(size=5, overlap=-1), "chunker.overlap must be >= 0"),
        (lambda: RecursiveChunker(length="words"), "chunker.length must be 'tokens' or 'chars'"),
        (lambda: SentenceChunker(size=-3), "chunker.size must be > 0"),
        (lambda: FixedTokenChunker(encoding="gpt2"), "tokenizer.encoding must be one of"),
    ],
)
def test_impossible_settings_are_refused(build, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build()
