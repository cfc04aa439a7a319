"""The section chunker: sections from heading to heading, tables whole, pages kept apart, and heading paths that
retrievers read before a chunk's text while its span stays its own."""

from __future__ import annotations

from ragsweep.chunking.sections import SectionChunker, heading_paths
from ragsweep.retrieval.bm25 import BM25Retriever
from ragsweep.types import Document, HeadedChunk, PagedDocument

GUIDE = """# Guide

Intro text about the tool.

## Install

Run pip install ragsweep in a fresh virtual environment.

```bash
# not a heading: a comment in a code block
make run
```

| Extra | Adds |
|---|---|
| llama | llama.cpp |

## Proxies

Set the argument when you create a client.
"""


def test_no_chunk_crosses_a_heading_and_a_table_stays_whole():
    document = Document("guide.md", GUIDE)
    chunks = SectionChunker(size=400).split(document)
    texts = [chunk.text for chunk in chunks]
    assert texts[0] == "# Guide\n\nIntro text about the tool."
    assert texts[1].startswith("## Install") and texts[1].endswith("make run\n```")  # the fence's # is no heading
    assert "| Extra | Adds |\n|---|---|\n| llama | llama.cpp |" in texts
    assert texts[-1] == "## Proxies\n\nSet the argument when you create a client."
    assert all(chunk.text == GUIDE[chunk.start : chunk.end] for chunk in chunks)


def test_heading_paths_follow_the_levels():
    starts, paths = heading_paths("# A\n## B\n### C\n## D\n# E\n")
    assert paths == ["A", "A > B", "A > B > C", "A > D", "E"]
    assert starts == [0, 4, 9, 15, 20]


def test_within_pages_cuts_at_every_page():
    text = "First page ends mid sentence and\n\nthe second page goes on here."
    document = PagedDocument("f.pdf", text, (0, text.index("the second")))
    together = SectionChunker(size=200).split(document)
    apart = SectionChunker(size=200, within_pages=True).split(document)
    assert len(together) == 1
    assert [chunk.text for chunk in apart] == ["First page ends mid sentence and", "the second page goes on here."]


def test_headings_in_text_are_what_retrievers_read_and_spans_stay_the_chunks_own():
    document = Document("guide.md", GUIDE)
    chunker = SectionChunker(size=400, headings_in_text=True)
    chunks = chunker.retrieved_as(chunker.split(document), {"guide.md": document})
    proxies = chunks[-1]
    assert isinstance(proxies, HeadedChunk) and proxies.heading == "Guide > Proxies"
    assert proxies.search_text == "Guide > Proxies\n\n## Proxies\n\nSet the argument when you create a client."
    assert proxies.text == GUIDE[proxies.start : proxies.end]
    plain = SectionChunker(size=400).retrieved_as(chunks, {"guide.md": document})
    assert plain is chunks  # without the setting, the chunks as they are


def test_a_question_naming_only_a_heading_finds_the_sections_later_chunks_when_headings_are_read():
    text = ("# Proxies\n\nSet the argument when you create a client of the library.\n\n"
            "Credentials in the URL are sent with every request the client makes.\n")
    document = Document("guide.md", text)
    for headings_in_text in (False, True):
        chunker = SectionChunker(size=16, headings_in_text=headings_in_text)
        chunks = chunker.retrieved_as(chunker.split(document), {"guide.md": document})
        later = next(i for i, chunk in enumerate(chunks) if chunk.text.startswith("Credentials"))
        retriever = BM25Retriever()
        retriever.index(chunks)
        found = {hit.index for hit in retriever.search(["proxies"], len(chunks))[0] if hit.score > 0}
        assert (later in found) == headings_in_text
