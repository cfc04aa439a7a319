"""Small real files of every type a parser reads, made for the tests: two pages cut from a FinanceBench filing
(../shared), a page without text, an encrypted and a broken PDF, an HTML page with navigation around its article,
a Word file with headings, a list and a table."""

from __future__ import annotations

from pathlib import Path

FINANCEBENCH = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "financebench_dev"
FILING = FINANCEBENCH / "pdfs" / "3M_2018_10K.pdf"
CASH_FLOW_PAGE = 59  # 0-based: the 3M filing's cash flow statement, which FinanceBench's first question quotes
QUOTE = "Purchases of property, plant and equipment (PP&E)"


def filing_pages(path: Path, blank_after: bool = False) -> Path:
    """The filing's cash flow statement and the page after it, as a PDF of two pages (three with a blank one)."""
    import pypdf

    reader = pypdf.PdfReader(str(FILING))
    writer = pypdf.PdfWriter()
    for page in (CASH_FLOW_PAGE, CASH_FLOW_PAGE + 1):
        writer.add_page(reader.pages[page])
    if blank_after:
        writer.add_blank_page()
    with open(path, "wb") as handle:
        writer.write(handle)
    return path


def encrypted_pdf(path: Path) -> Path:
    import pypdf

    writer = pypdf.PdfWriter(clone_from=str(filing_pages(path.with_name("plain.pdf"))))
    writer.encrypt("secret", algorithm="AES-128")
    with open(path, "wb") as handle:
        writer.write(handle)
    path.with_name("plain.pdf").unlink()
    return path


def broken_pdf(path: Path) -> Path:
    path.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage, cut short")
    return path


HTML = """<html><head><title>Proxies</title></head><body>
<nav><a href="/">Home</a> | <a href="/docs">Docs</a> | <a href="/blog">Blog</a></nav>
<main><article>
<h1>Using proxies</h1>
<p>Set the proxy argument when you create a client; environment variables are read too, unless trust_env is
false. A proxy URL may carry credentials, which are sent with every request the client makes.</p>
<h2>SOCKS</h2>
<p>SOCKS proxies need the socks extra, installed with pip install httpx[socks], and a socks5:// URL.</p>
</article></main>
<footer>Copyright 2026 Example Corporation. All rights reserved.</footer>
</body></html>
"""


def html_page(path: Path) -> Path:
    path.write_text(HTML, encoding="utf-8")
    return path


def word_file(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Release process", level=1)
    document.add_paragraph("Every release is tagged from main after the test suite passes on all platforms.")
    document.add_heading("Checklist", level=2)
    document.add_paragraph("Update the changelog", style="List Bullet")
    document.add_paragraph("Bump the version number", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for row, cells in zip(table.rows, (("Platform", "Runner"), ("Linux", "ubuntu-24.04"))):
        for cell, text in zip(row.cells, cells):
            cell.text = text
    document.save(str(path))
    return path
