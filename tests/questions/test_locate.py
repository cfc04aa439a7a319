"""Excerpts located as spans: verbatim first, else a fuzzy match above the threshold, never the model's copy."""

from __future__ import annotations

import pytest

from ragsweep.data.locate import locate

DOCUMENT = ("The board met on 4 March 1901 in Leeds. After a long debate, the members approved the new "
            "canal, which would carry coal from the northern pits to the port. Work began the following spring; "
            "it cost £41,000, twice the estimate.")
SENTENCE = "After a long debate, the members approved the new canal, which would carry coal from the northern pits to the port."


def span_of(text: str) -> tuple[int, int]:
    start = DOCUMENT.index(text)
    return start, start + len(text)


def test_a_verbatim_excerpt_is_its_first_occurrence():
    found = locate(DOCUMENT, SENTENCE)
    assert (found.start, found.end, found.exact, found.similarity) == (*span_of(SENTENCE), True, 1.0)


@pytest.mark.parametrize("corrupt", [
    lambda s: s.replace("approved", "accepted"),          # a changed word
    lambda s: s.replace(",", ""),                         # dropped punctuation
    lambda s: s.upper(),                                  # changed case
    lambda s: "  " + s.replace(" the ", "   the ") + " ",  # other whitespace
], ids=["word", "punctuation", "case", "whitespace"])
def test_a_corrupted_copy_is_located_at_the_documents_text(corrupt):
    found = locate(DOCUMENT, corrupt(SENTENCE), min_similarity=0.9)
    assert found is not None and not found.exact
    assert (found.start, found.end) == span_of(SENTENCE)
    assert DOCUMENT[found.start:found.end] == SENTENCE  # the stored text is the document's, not the copy
    assert 0.9 <= found.similarity <= 1.0


def test_a_copy_below_the_threshold_is_refused():
    invented = "Before a short debate, the directors rejected the old railway, which carried iron to the sea."
    assert locate(DOCUMENT, invented, min_similarity=0.9) is None
    loose = locate(DOCUMENT, invented, min_similarity=0.5)
    assert loose is not None and loose.similarity < 0.9  # found only because the threshold allowed it


def test_the_search_stays_inside_the_given_window():
    inside = DOCUMENT.index("Work began")
    assert locate(DOCUMENT, "The board met on 4 March 1901 in Leeds.", start=inside) is None
    found = locate(DOCUMENT, "work began the following spring", start=inside)
    assert DOCUMENT[found.start:found.end] == "Work began the following spring"


def test_an_empty_excerpt_or_a_bad_threshold():
    assert locate(DOCUMENT, "   ") is None
    with pytest.raises(ValueError, match="min_similarity"):
        locate(DOCUMENT, "canal", min_similarity=0)
