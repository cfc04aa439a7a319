"""Widened passages are spans of their documents holding their chunks, merged when they touch, and exactly what
each rule says."""

from __future__ import annotations

import pytest

from ragsweep.augment.base import Passage, merged
from ragsweep.augment.neighbours import NeighboursAugmenter
from ragsweep.augment.parent import ParentAugmenter
from ragsweep.types import Chunk, Document, Hit, Span

A = Document("a", "".join(f"{i:02d}-------|" for i in range(10)))  # ten 10-character pieces, 100 characters
B = Document("b", "first paragraph here.\n\nsecond one, longer than the first.\n  \nthird.")
DOCUMENTS = {"a": A, "b": B}
CHUNKS = [Chunk.of(A, 10 * i, 10 * i + 10) for i in range(10)] + [Chunk.of(B, 0, 10), Chunk.of(B, 23, 33)]


def _spans(rows: list[list[Passage]]) -> list[list[tuple[str, int, int]]]:
    return [[(p.span.doc_id, p.span.start, p.span.end) for p in row] for row in rows]


def test_touching_or_overlapping_passages_of_a_document_merge_at_the_best_ranked_place():
    passages = [Passage(Span("a", 40, 50), 0.9), Passage(Span("b", 0, 5), 0.8), Passage(Span("a", 20, 30), 0.7),
                Passage(Span("a", 30, 40), 0.6), Passage(Span("a", 50, 55), 0.5)]
    # (30, 40) touches both (20, 30) and (40, 50): all three become one, at the first's place and score
    assert merged(passages) == [Passage(Span("a", 20, 55), 0.9), Passage(Span("b", 0, 5), 0.8)]
    assert merged([Passage(Span("a", 0, 5), 1.0), Passage(Span("a", 6, 9), 0.5)]) == [
        Passage(Span("a", 0, 5), 1.0), Passage(Span("a", 6, 9), 0.5)]  # a gap of one character stays


def test_neighbours_add_chunks_of_the_same_document_then_characters_within_it():
    hits = [[Hit(4, 0.9)], [Hit(0, 0.8)], [Hit(9, 0.7)], [Hit(10, 0.6)]]
    widened = NeighboursAugmenter(chunks=1).augment(hits, CHUNKS, DOCUMENTS)
    # chunk 9 is a's last: its right neighbour (chunk 10) is b's first and is not taken
    assert _spans(widened) == [[("a", 30, 60)], [("a", 0, 20)], [("a", 80, 100)], [("b", 0, 33)]]
    by_characters = NeighboursAugmenter(chunks=0, characters=5).augment(hits, CHUNKS, DOCUMENTS)
    assert _spans(by_characters) == [[("a", 35, 55)], [("a", 0, 15)], [("a", 85, 100)], [("b", 0, 15)]]
    both = NeighboursAugmenter(chunks=2, characters=3).augment([[Hit(4, 1.0), Hit(7, 0.5)]], CHUNKS, DOCUMENTS)
    assert _spans(both) == [[("a", 17, 100)]]  # (17, 73) and (47, 100) overlap: one passage


def test_a_parent_is_the_paragraph_holding_the_chunk_or_every_paragraph_it_crosses():
    paragraphs = ParentAugmenter()
    second = B.text.index("second")
    assert _spans(paragraphs.augment([[Hit(10, 1.0)]], CHUNKS, DOCUMENTS)) == [[("b", 0, 21)]]
    assert _spans(paragraphs.augment([[Hit(11, 1.0)]], CHUNKS, DOCUMENTS)) == [
        [("b", second, B.text.index(".\n  ") + 1)]]
    crossing = [Chunk.of(B, 15, 30)]
    assert _spans(paragraphs.augment([[Hit(0, 1.0)]], crossing, DOCUMENTS)) == [
        [("b", 0, B.text.index(".\n  ") + 1)]]
    no_boundary = ParentAugmenter().augment([[Hit(3, 1.0)]], CHUNKS, DOCUMENTS)
    assert _spans(no_boundary) == [[("a", 0, 100)]]  # a document without a boundary is one parent


def test_a_long_parent_is_cut_around_its_chunk():
    cut = ParentAugmenter(max_characters=30).augment([[Hit(4, 1.0)], [Hit(0, 1.0)], [Hit(9, 1.0)]], CHUNKS, DOCUMENTS)
    assert _spans(cut) == [[("a", 30, 60)], [("a", 0, 30)], [("a", 70, 100)]]  # shifted where a side runs out
    assert _spans(ParentAugmenter(max_characters=4).augment([[Hit(4, 1.0)]], CHUNKS, DOCUMENTS)) == [[("a", 40, 50)]]


def test_sections_by_a_heading_boundary():
    text = "# One\nalpha beta\n## Two\ngamma delta\n# Three\nepsilon"
    document = Document("m", text)
    chunk = Chunk.of(document, text.index("gamma"), text.index("gamma") + 5)
    widened = ParentAugmenter(boundary=r"\n(?=#{1,6} )").augment([[Hit(0, 1.0)]], [chunk], {"m": document})
    assert widened[0][0].span == Span("m", text.index("## Two"), text.index("\n# Three"))


@pytest.mark.parametrize("make, message", [
    (lambda: NeighboursAugmenter(chunks=0, characters=0), "augment.chunks and augment.characters are both 0"),
    (lambda: NeighboursAugmenter(chunks=-1), "augment.chunks must be an integer >= 0"),
    (lambda: ParentAugmenter(boundary="("), "augment.boundary='\\(' is not a regular expression"),
    (lambda: ParentAugmenter(max_characters=0), "augment.max_characters must be a positive integer or null"),
])
def test_bad_settings_name_their_key(make, message):
    with pytest.raises(ValueError, match=message):
        make()
