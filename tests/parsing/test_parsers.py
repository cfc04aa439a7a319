"""Every parser on small real files: the text it gives, its pages, what it cannot read, and its cache."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil

import pytest
from hydra.utils import instantiate

from ragsweep.cache import StageCache
from ragsweep.parsing.base import PAGE_BREAK, Parsed, UnreadableFile
from ragsweep.parsing.docx import DocxText
from ragsweep.parsing import files as parsing_files
from ragsweep.parsing.files import parse_files
from ragsweep.parsing.html import HtmlText
from ragsweep.parsing.pdf import ENCRYPTED, PdfiumText, PdfminerText, PypdfText
from ragsweep.types import PagedDocument
from tests.conf_options import compose_option, options
from tests.parsing.documents import QUOTE, broken_pdf, encrypted_pdf, filing_pages, html_page, word_file

PDF_PARSERS = [PdfiumText(), PypdfText(), PdfminerText()]


@pytest.fixture(scope="module")
def filing(tmp_path_factory):
    return filing_pages(tmp_path_factory.mktemp("pdf") / "filing.pdf", blank_after=True)


@pytest.mark.parametrize("parser", PDF_PARSERS, ids=lambda parser: type(parser).__name__)
def test_each_pdf_parser_reads_a_real_filings_pages_and_keeps_where_each_starts(parser, filing):
    parsed = parser.parse(filing)
    assert len(parsed.pages) == 3 and parsed.pages[0] == 0
    first, second = parsed.page_range(0), parsed.page_range(1)
    assert first[1] + len(PAGE_BREAK) == second[0]  # pages follow one another, a paragraph break apart
    assert "cash flows from operating activities" in parsed.text[slice(*first)].lower()
    assert "\r" not in parsed.text and "\x0c" not in parsed.text
    assert parsed.blank_pages == (2,)  # the page without text is said, not silently empty
    paged = PagedDocument("filing.pdf", parsed.text, parsed.pages)
    assert paged.pages_of(first[0], second[0] + 5) == (1, 2) and paged.pages_of(second[0], second[0] + 1) == (2,)
    assert parser.library.split()[0] in ("pypdfium2", "pypdf", "pdfminer.six")


def test_pdf_parsers_differ_in_what_they_keep_of_a_tables_rows(filing):
    """pdfium and pypdf keep a row's label beside its numbers; pdfminer.six lays a table out column by column."""
    row = "Purchases of property, plant and equipment (PP&E)"
    texts = {type(parser).__name__: parser.parse(filing).text for parser in PDF_PARSERS}
    assert all(row in text for text in texts.values())
    assert "(PP&E) (1,577)" in " ".join(texts["PdfiumText"].split())
    assert "(PP&E) (1,577)" not in " ".join(texts["PdfminerText"].split())


def test_html_keeps_the_article_as_markdown_and_drops_navigation_and_footer(tmp_path):
    text = HtmlText().parse(html_page(tmp_path / "page.html")).text
    assert text.startswith("# Using proxies")
    assert "\n## SOCKS\n" in text
    assert "unless trust_env is" in text  # the converter's Markdown escape (trust\_env) undone
    assert "Home" not in text and "Copyright" not in text


def test_word_files_keep_headings_lists_and_tables(tmp_path):
    text = DocxText().parse(word_file(tmp_path / "release.docx")).text
    assert text.split("\n\n") == [
        "# Release process",
        "Every release is tagged from main after the test suite passes on all platforms.",
        "## Checklist", "- Update the changelog", "- Bump the version number",
        "| Platform | Runner |\n| Linux | ubuntu-24.04 |"]


def test_text_and_markdown_are_read_as_they_are(tmp_path):
    (tmp_path / "notes.md").write_bytes(b"# Notes\r\n\r\nLine one.\r\n")
    parser = instantiate(compose_option("parser", "auto").parser)
    assert parse_files(parser, [tmp_path / "notes.md"], StageCache(tmp_path / "cache")) == [
        Parsed("# Notes\n\nLine one.\n")]


@pytest.mark.parametrize("option", options("parser"))
def test_every_parser_option_reads_every_file_type(option, tmp_path, filing):
    parser = instantiate(compose_option("parser", option).parser)
    files = [filing, html_page(tmp_path / "a.html"), word_file(tmp_path / "b.docx")]
    (tmp_path / "c.txt").write_text("plain text")
    parsed = parse_files(parser, [*files, tmp_path / "c.txt"], StageCache(tmp_path / "cache"))
    assert QUOTE in parsed[0].text and "SOCKS" in parsed[1].text and "Checklist" in parsed[2].text
    assert parsed[3].text == "plain text"


def test_a_parse_is_cached_by_content_and_parser_and_an_unreadable_file_is_said_not_cached(tmp_path, filing):
    cache = StageCache(tmp_path / "cache")
    copy = shutil.copy(filing, tmp_path / "renamed.pdf")
    locked, broken = encrypted_pdf(tmp_path / "locked.pdf"), broken_pdf(tmp_path / "broken.pdf")
    parser = instantiate(compose_option("parser", "pdfium").parser)
    first = parse_files(parser, [filing, locked, broken], cache, helpers=False)
    assert isinstance(first[0], Parsed)
    assert all(isinstance(result, UnreadableFile) for result in first[1:])
    assert cache.misses["parsed"] == 3
    again = parse_files(parser, [copy, locked], cache, helpers=False)  # the same bytes, another name: cached
    assert again[0] == first[0] and cache.hits["parsed"] == 1 and cache.misses["parsed"] == 4
    other = instantiate(compose_option("parser", "pypdf").parser)
    parse_files(other, [filing], cache, helpers=False)  # another parser: its own entry
    assert cache.misses["parsed"] == 5


@pytest.mark.parametrize("parser", PDF_PARSERS, ids=lambda parser: type(parser).__name__)
def test_each_pdf_parser_refuses_an_encrypted_and_a_broken_file_in_one_line(parser, tmp_path):
    files = [encrypted_pdf(tmp_path / "locked.pdf"), broken_pdf(tmp_path / "broken.pdf")]
    cache = StageCache(tmp_path / "cache")
    locked, broken = parse_files(instantiate_with(parser), files, cache)
    assert isinstance(locked, UnreadableFile) and str(locked) == ENCRYPTED  # every parser says it alike
    assert isinstance(broken, UnreadableFile) and "\n" not in str(broken) and str(broken)


def instantiate_with(pdf):
    """The `auto` option with `pdf` as its PDF parser."""
    return dataclasses.replace(instantiate(compose_option("parser", "auto").parser), pdf=pdf)


def test_helper_processes_share_the_files_and_give_the_same_texts(tmp_path, filing, monkeypatch):
    """Ten files of distinct bytes (a comment after the PDF's end), parsed by pdfminer.six: a helper on the other
    core takes some of them, and every text equals one process's parse. (The suite's two workers each hold one
    core of the machine's share, which would leave no core for a helper: this process is given two.)"""
    monkeypatch.setattr(parsing_files, "model_threads", lambda threads: contextlib.nullcontext(2))
    files = []
    for number in range(10):
        files.append(tmp_path / f"copy{number}.pdf")
        files[-1].write_bytes(filing.read_bytes() + f"\n% copy {number}\n".encode())
    parser = instantiate(compose_option("parser", "pdfminer").parser)
    shared = StageCache(tmp_path / "shared")
    together = parse_files(parser, files, shared)
    assert shared.misses["parsed"] < len(files)  # the rest were parsed by the helper, read from the cache
    assert sum(1 for _ in (tmp_path / "shared" / "parsed").rglob("*.npz")) == len(files)
    alone = parse_files(parser, files, StageCache(tmp_path / "alone"), helpers=False)
    assert together == alone
