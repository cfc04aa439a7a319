"""The inputs of every benchmark's smallest size (`--smallest`): a few documents and a few questions, made from
the embedded sotu_qa, so that `make test` runs each script in seconds (tests/test_benchmarks.py) and a change
that breaks a benchmark fails there, not weeks later in a measurement.

The other scripts import it; run alone, it writes every input to a folder and prints what it wrote:
python benchmarks/smallest.py [DIR]
"""

from __future__ import annotations

import csv
import json
import sys
import tempfile
from pathlib import Path

DOCUMENTS = ("1790-Washington-1", "1862-Lincoln-1", "1941-Roosevelt-1")
CHARACTERS = 10000  # of each address (Washington's is shorter): enough chunks for k=10 at 800 tokens


def _questions() -> tuple[dict[str, str], list[dict]]:
    """The addresses' first CHARACTERS characters, and the sotu_qa questions whose references lie there."""
    import ragsweep  # noqa: F401  (offline defaults)
    from ragsweep.data.sotu_qa import SotuQADataset

    dataset = SotuQADataset().load()
    texts = {doc_id: dataset.documents[doc_id].text[:CHARACTERS] for doc_id in DOCUMENTS}
    questions = [{"id": query.id, "question": query.text, "corpus": query.references[0].doc_id,
                  "references": [{"doc_id": ref.doc_id, "start": ref.start, "end": ref.end}
                                 for ref in query.references]}
                 for query in dataset.queries
                 if all(ref.doc_id in texts and ref.end <= CHARACTERS for ref in query.references)
                 and len({ref.doc_id for ref in query.references}) == 1]
    return texts, questions


def chroma_general(data: Path) -> Path:
    """`data/chroma_general/` in chroma_general's form (corpora/*.md, questions_df.csv) and
    `data/relevance_heldout.jsonl` (each address's first question, kept out of questions_df.csv, in the form of
    benchmarks/data's); returns `data`, the folder to give as paths.data (its chroma_general/ as dataset.path)."""
    texts, questions = _questions()
    firsts = {question["corpus"]: question["id"] for question in reversed(questions)}.values()
    new = [question for question in questions if question["id"] in firsts]  # each address's first: its opening
    corpora = data / "chroma_general" / "corpora"
    corpora.mkdir(parents=True, exist_ok=True)
    for doc_id, text in texts.items():
        (corpora / f"{doc_id}.md").write_text(text, encoding="utf-8", newline="")
    with open(data / "chroma_general" / "questions_df.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["question", "references", "corpus_id"])
        for question in (question for question in questions if question not in new):
            references = [{"content": texts[ref["doc_id"]][ref["start"]:ref["end"]], "start_index": ref["start"],
                           "end_index": ref["end"]} for ref in question["references"]]
            writer.writerow([question["question"], json.dumps(references), question["corpus"]])
    (data / "relevance_heldout.jsonl").write_text(
        "".join(json.dumps({**question, "id": f"ho-{question['id']}"}) + "\n" for question in new),
        encoding="utf-8")
    return data


def chroma_general_folder(given: Path | None, smallest: bool, work: Path) -> Path:
    """The chroma_general folder a benchmark measures: the one given (`--data`), else with `--smallest` a tiny one
    made under `work`, else ../shared/data's."""
    if given is not None:
        return given.resolve()
    if smallest:
        return chroma_general(work / "smallest") / "chroma_general"
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "chroma_general"


def filings(folder: Path) -> Path:
    """`folder/pdfs/*.pdf` (each address as a PDF of two pages) and `folder/questions.jsonl` in FinanceBench's
    form (`doc_name`, `evidence` as a Python literal of evidence_text and its 0-based page); returns `folder`."""
    texts, questions = _questions()
    (folder / "pdfs").mkdir(parents=True, exist_ok=True)
    pages: dict[str, list[str]] = {}
    for doc_id, text in texts.items():
        pages[doc_id] = _pdf(folder / "pdfs" / f"{doc_id}.pdf", " ".join(text.split()))
    rows = []
    for number, question in enumerate(questions):
        ref = question["references"][0]
        quote = " ".join(texts[ref["doc_id"]][ref["start"]:ref["end"]].split())
        page = next((index for index, words in enumerate(pages[ref["doc_id"]]) if quote in words), 0)
        evidence = [{"evidence_text": quote, "doc_name": ref["doc_id"], "evidence_page_num": page,
                     "evidence_text_full_page": pages[ref["doc_id"]][page]}]
        rows.append({"financebench_id": f"smallest_{number}", "question": question["question"],
                     "answer": quote, "doc_name": ref["doc_id"], "evidence": repr(evidence)})
    (folder / "questions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return folder


def _pdf(path: Path, text: str, width: int = 90, lines_a_page: int = 30) -> list[str]:
    """A PDF of `text` in Helvetica, `width` characters a line; returns each page's text (its lines joined by
    spaces). Written by hand: no PDF writer is a dependency of ragsweep."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    chunks = [lines[start:start + lines_a_page] for start in range(0, len(lines), lines_a_page)]
    count = len(chunks)
    objects = ["<< /Type /Catalog /Pages 2 0 R >>",
               "<< /Type /Pages /Kids [" + " ".join(f"{4 + 2 * i} 0 R" for i in range(count)) + f"] /Count {count} >>",
               "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]
    for number, chunk in enumerate(chunks):
        shown = "".join(f"({_escaped(each)}) Tj T* " for each in chunk)
        stream = f"BT /F1 10 Tf 12 TL 50 760 Td {shown}ET"
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                       f"/Contents {5 + 2 * number} 0 R >>")
        objects.append(f"<< /Length {len(stream.encode('latin-1', 'replace'))} >>\nstream\n{stream}\nendstream")
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1", "replace")
    table = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{table}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return [" ".join(chunk) for chunk in chunks]


def _escaped(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="ragsweep-smallest-"))
    chroma_general(folder / "data")
    filings(folder / "filings")
    questions = (folder / "data" / "chroma_general" / "questions_df.csv").read_text(encoding="utf-8")
    rows = len(list(csv.reader(questions.splitlines()))) - 1
    new = len((folder / "data" / "relevance_heldout.jsonl").read_text(encoding="utf-8").splitlines())
    print(f"{folder / 'data'}: chroma_general/ ({len(DOCUMENTS)} corpora, {rows} questions) and relevance_heldout.jsonl "
          f"({new} questions)")
    print(f"{folder / 'filings'}: {len(list((folder / 'filings' / 'pdfs').glob('*.pdf')))} PDFs, "
          f"{len((folder / 'filings' / 'questions.jsonl').read_text().splitlines())} questions")


if __name__ == "__main__":
    main()
