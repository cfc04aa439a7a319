"""dataset=files: a folder of documents as they are, questions quoting their evidence, the quotes found in each
parser's text, and every refusal of the loader in one line naming the file, line and field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate

from ragsweep.cache import StageCache
from ragsweep.data.base import DatasetError
from ragsweep.data.evidence import fold
from ragsweep.data.files import FilesDataset
from ragsweep.data.lost_evidence import lost_in_every_text
from ragsweep.metrics.evaluate import SpanEvaluator
from ragsweep.types import Chunk, Dataset, Document, Hit, Query, Span
from tests.conf_options import compose_option
from tests.parsing.documents import FINANCEBENCH, QUOTE, encrypted_pdf, filing_pages, html_page, word_file

GUIDE = """# Guide

## Configuration

Read the con-
figuration ﬁle before the first run; every key has a default.
"""


def parser(option: str = "auto"):
    return instantiate(compose_option("parser", option).parser)


def write_questions(folder: Path, *records: dict) -> None:
    (folder / "questions.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Documents of every type at several depths, and questions quoting them."""
    root = tmp_path_factory.mktemp("team")
    (root / "docs").mkdir()
    (root / "reports").mkdir()
    (root / "docs" / "guide.md").write_text(GUIDE)
    html_page(root / "docs" / "proxies.html")
    word_file(root / "release.docx")
    (root / "notes.txt").write_text("Deploys happen on Tuesdays.\n")
    filing_pages(root / "reports" / "filing.pdf")
    (root / ".hidden").write_text("left out")
    write_questions(
        root,
        {"id": "q1", "question": "When are deploys?", "answers": ["Tuesdays"],
         "evidence": [{"doc": "notes.txt", "quote": "Deploys happen on Tuesdays."}]},
        {"id": "q2", "question": "Is trust_env honoured?",
         "evidence": [{"doc": "proxies", "quote": "environment variables are read too,\nunless trust_env is false"}]},
        {"id": "q3", "question": "When is a release tagged?",
         "evidence": [{"doc": "release.docx", "quote": "tagged from main after the test-suite passes"}]},
        {"id": "q4", "question": "What were 3M's capital expenditures?",
         "evidence": [{"doc": "reports/filing", "quote": QUOTE + " (1,577) (1,373) (1,420)", "page": 1}]},
        {"id": "q5", "question": "What to read first?",
         "evidence": [{"doc": "guide", "quote": "Read the configuration file before the first run"}]},
        {"id": "q6", "question": "Which two?", "evidence": [
            {"doc": "notes.txt", "quote": "Deploys happen on Tuesdays"},
            {"doc": "release.docx", "quote": "This sentence is in no document at all, anywhere."}]},
    )
    return root


@pytest.fixture(scope="module")
def loaded(folder, tmp_path_factory) -> Dataset:
    return FilesDataset(str(folder), parser(), cache=StageCache(tmp_path_factory.mktemp("cache"))).load()


def test_every_file_type_at_any_depth_is_a_document_named_by_its_path(loaded):
    assert sorted(loaded.documents) == ["docs/guide.md", "docs/proxies.html", "notes.txt", "release.docx",
                                        "reports/filing.pdf"]
    assert loaded.documents["reports/filing.pdf"].pages[1] > 0  # a PDF's pages, kept as character offsets


def test_each_quote_becomes_the_span_of_the_parsed_text_that_holds_it(loaded):
    for query in loaded.queries:
        assert len(query.references) == len(_quotes(query.id))
        for span, evidence in zip(query.references, _quotes(query.id)):
            found = loaded.documents[span.doc_id].text[span.start : span.end]
            assert fold(found).text == fold(evidence).text, (query.id, found)
    q4 = next(query for query in loaded.queries if query.id == "q4").references[0]
    pdf = loaded.documents["reports/filing.pdf"]
    assert q4.end <= pdf.pages[1]  # found on the page it cites
    assert QUOTE in pdf.text[q4.start : q4.end]
    q5 = next(query for query in loaded.queries if query.id == "q5").references[0]
    assert loaded.documents["docs/guide.md"].text[q5.start : q5.end].startswith("Read the con-\nfiguration ﬁle")


def _quotes(question_id: str) -> list[str]:
    return {"q1": ["Deploys happen on Tuesdays."],
            "q2": ["environment variables are read too, unless trust_env is false"],
            "q3": ["tagged from main after the test suite passes"],
            "q4": [QUOTE + " (1,577) (1,373) (1,420)"],
            "q5": ["Read the configuration file before the first run"],
            "q6": ["Deploys happen on Tuesdays"]}[question_id]


def test_a_lost_quote_stays_in_its_question_and_is_counted(loaded):
    q6 = next(query for query in loaded.queries if query.id == "q6")
    assert len(q6.references) == 1 and q6.lost == ("This sentence is in no document at all, anywhere.",)
    assert q6.evidence_located == 0.5
    assert loaded.loading == {"pages": 6, "files_without_text": 0, "pages_without_text": 0, "evidence": 7,
                              "evidence_found": 6,
                              "evidence_verbatim": 5}  # q3's quote is not verbatim


def test_lost_evidence_counts_in_what_a_question_asks_for_and_no_chunk_meets_it():
    """One reference of 10 characters retrieved whole, one lost of 10: half the evidence was retrieved."""
    document = Document("a", "0123456789 and more text after it")
    query = Query("q", "?", (Span("a", 0, 10),), lost=("abcdefghij",))
    dataset = Dataset("d", {"a": document}, [query])
    chunks = [Chunk.of(document, 0, 10), Chunk.of(document, 11, 33)]
    scores = SpanEvaluator(unit="chars").score(dataset, chunks, [[Hit(0, 1.0)]], k=1)[0]
    assert scores["token_recall"] == pytest.approx(0.5)
    assert scores["token_precision"] == pytest.approx(1.0)
    assert scores["chunk_recall"] == pytest.approx(0.5)
    assert scores["evidence_located"] == 0.5
    whole = SpanEvaluator(unit="chars").score(Dataset("d", {"a": document}, [Query("q", "?", (Span("a", 0, 10),))]),
                                              chunks, [[Hit(0, 1.0)]], k=1)[0]
    assert whole["token_recall"] == 1.0 and whole["evidence_located"] == 1.0


def test_a_dataset_that_loses_nothing_keeps_its_fingerprint():
    document = Document("a", "some text")
    assert Dataset("d", {"a": document}, [Query("q", "?", (Span("a", 0, 4),))]).fingerprint == Dataset(
        "d", {"a": document}, [Query("q", "?", (Span("a", 0, 4),), lost=())]).fingerprint
    assert Dataset("d", {"a": document}, [Query("q", "?", (Span("a", 0, 4),), lost=("x",))]).fingerprint != Dataset(
        "d", {"a": document}, [Query("q", "?", (Span("a", 0, 4),))]).fingerprint


def test_financebench_loads_as_published_and_pdfium_finds_its_evidence(tmp_path):
    """FinanceBench's rows (doc_name, evidence_text, 0-based evidence_page_num) without conversion; the target:
    the best PDF parser locates >= 95% of the references."""
    dataset = FilesDataset(str(FINANCEBENCH), parser("pdfium"), cache=StageCache(tmp_path)).load()
    assert len(dataset.queries) == 21 and len(dataset.documents) == 12
    assert dataset.loading["evidence"] == 27
    assert dataset.loading["evidence_found"] / dataset.loading["evidence"] >= 0.95
    first = dataset.queries[0]
    assert first.id == "financebench_id_03029" and first.answers == ("$1577.00",)
    span = first.references[0]
    document = dataset.documents[span.doc_id]
    assert span.doc_id == "pdfs/3M_2018_10K.pdf"
    assert document.pages[59] <= span.start < document.pages[60]  # evidence_page_num 59, counted from 0


def test_questions_csv_a_row_per_quote(tmp_path):
    (tmp_path / "a.md").write_text("Alpha beta gamma delta.\n\nEpsilon zeta eta theta.\n")
    (tmp_path / "questions.csv").write_text(
        "id,question,doc,quote,page,answer\n"
        "1,Which letters?,a.md,Alpha beta gamma,,alpha\n"
        "1,Which letters?,a,Epsilon zeta,1,\n"
        "2,Which one?,a.md,eta theta,,\n")
    dataset = FilesDataset(str(tmp_path), parser()).load()
    assert [(query.id, len(query.references), query.answers) for query in dataset.queries] == [
        ("1", 2, ("alpha",)), ("2", 1, ())]


def _folder(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


OK = '{"id": "q", "question": "?", "evidence": [{"doc": "a.md", "quote": "Alpha beta"}]}\n'
REFUSALS = {  # files of the folder (an empty dict: the folder is missing), and what the one line must say
    "missing folder": ({}, "dataset.path=", "does not exist"),
    "no questions": ({"a.md": "Alpha beta"}, "no questions.jsonl or questions.csv"),
    "both question files": ({"a.md": "Alpha", "questions.jsonl": OK, "questions.csv": "id\n"}, "keep one"),
    "no documents": ({"questions.jsonl": OK}, "no documents found"),
    "unknown type": ({"a.md": "Alpha beta", "b.xlsx": "x", "questions.jsonl": OK}, "b.xlsx: no parser reads .xlsx"),
    "bad json": ({"a.md": "Alpha beta", "questions.jsonl": "{nope\n"}, "questions.jsonl:1: invalid JSON"),
    "no evidence field": ({"a.md": "Alpha", "questions.jsonl": '{"id": "q", "question": "?"}\n'},
                          "questions.jsonl:1: missing field 'evidence'"),
    "empty evidence": ({"a.md": "Alpha", "questions.jsonl": '{"id": "q", "question": "?", "evidence": []}\n'},
                       "field 'evidence' is empty"),
    "evidence not an object": (
        {"a.md": "Alpha", "questions.jsonl": '{"id": "q", "question": "?", "evidence": ["a"]}\n'},
        "evidence[0]: expected an object"),
    "unknown document": ({"a.md": "Alpha", "questions.jsonl": OK.replace('"a.md"', '"b.md"')},
                         "evidence[0] doc: unknown document 'b.md'"),
    "document close to one": ({"guide.md": "Alpha", "questions.jsonl": OK.replace('"a.md"', '"guides.md"')},
                              "did you mean 'guide.md'?"),
    "ambiguous name": ({"a.md": "Alpha", "x/a.md": "Alpha", "questions.jsonl": OK.replace('"a.md"', '"a"')},
                       "'a' names 2 documents"),
    "empty quote": ({"a.md": "Alpha", "questions.jsonl": OK.replace('"Alpha beta"', '" "')}, "field 'quote' is empty"),
    "page zero": ({"a.md": "Alpha", "questions.jsonl": OK.replace('"Alpha beta"}', '"Alpha", "page": 0}')},
                  "field 'page' must be a page number counted from 1, got 0"),
    "page past the end": ({"a.md": "Alpha beta", "questions.jsonl": OK.replace('"Alpha beta"}', '"Alpha", "page": 2}')},
                          "page 2 of a.md, which has 1 page(s)"),
    "financebench evidence not a list": (
        {"a.md": "Alpha", "questions.jsonl": '{"financebench_id": "f", "doc_name": "a", "question": "?", '
                                            '"evidence": "[{oops"}\n'}, "not a Python-literal list"),
    "financebench page not a number": (
        {"a.md": "Alpha", "questions.jsonl": '{"financebench_id": "f", "doc_name": "a", "question": "?", "evidence": '
                                            '[{"evidence_text": "Alpha", "evidence_page_num": "1"}]}\n'},
        "field 'evidence_page_num' must be a page number counted from 0"),
    "csv missing column": ({"a.md": "Alpha", "questions.csv": "id,question,doc\n1,?,a.md\n"},
                           "missing column(s) quote"),
    "csv id asks two questions": ({"a.md": "Alpha beta", "questions.csv": "id,question,doc,quote\n1,?,a.md,Alpha\n"
                                                                         "1,!,a.md,beta\n"}, "questions.csv:3: id '1'"),
    "csv bad page": ({"a.md": "Alpha", "questions.csv": "id,question,doc,quote,page\n1,?,a.md,Alpha,two\n"},
                     "questions.csv:2: column 'page'"),
    "duplicate question id": ({"a.md": "Alpha beta", "questions.jsonl": OK + OK}, "duplicate query id 'q'"),
    "unknown field in a question": ({"a.md": "Alpha beta", "questions.jsonl": OK.replace('"question"', '"query"')},
                                    "questions.jsonl:1: unknown field 'query'; did you mean 'question'?",
                                    "keep your own fields under 'metadata'"),
    "unknown field in evidence": ({"a.md": "Alpha beta", "questions.jsonl": OK.replace('"quote"', '"text"')},
                                  "evidence[0]: unknown field 'text'; did you mean 'quote'? the fields read are "
                                  "doc, quote, page"),
    "no text at all": ({"a.md": " \n", "questions.jsonl": OK}, "no file gave any text"),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_each_refusal_is_one_line_naming_the_file_and_what_to_fix(case, tmp_path):
    files, *said = REFUSALS[case]
    folder = _folder(tmp_path / "data", **files) if files else tmp_path / "absent"
    with pytest.raises(DatasetError) as refused:
        FilesDataset(str(folder), parser()).load()
    message = str(refused.value)
    assert "\n" not in message
    for part in said:
        assert part in message, message


def test_an_encrypted_pdf_is_refused_before_any_work_naming_it(tmp_path):
    encrypted_pdf(tmp_path / "locked.pdf")
    write_questions(tmp_path, {"id": "q", "question": "?", "evidence": [{"doc": "locked.pdf", "quote": "x"}]})
    for option in ("pdfium", "pypdf", "pdfminer"):
        with pytest.raises(DatasetError, match=r"locked\.pdf: .*try another parser"):
            FilesDataset(str(tmp_path), parser(option)).load()


def test_a_bad_min_similarity_is_refused():
    with pytest.raises(DatasetError, match=r"dataset.min_similarity must be in \(0, 1\]"):
        FilesDataset("x", parser(), min_similarity=1.5)


def test_a_file_without_text_is_named_and_its_evidence_lost(tmp_path, caplog):
    (tmp_path / "a.md").write_text("Alpha beta")
    (tmp_path / "scan.html").write_text("<html><body><img src='scan.png'></body></html>")
    write_questions(tmp_path, {"id": "q", "question": "?", "evidence": [{"doc": "scan.html", "quote": "Alpha"}]},
                    {**json.loads(OK), "id": "q2"})
    with caplog.at_level("WARNING"):
        dataset = FilesDataset(str(tmp_path), parser()).load()
    assert "scan.html" in caplog.text and dataset.loading["files_without_text"] == 1
    assert sorted(dataset.documents) == ["a.md"]
    assert dataset.queries[0].lost == ("Alpha",) and not dataset.queries[0].references


def test_the_fold_keeps_each_characters_origin():
    folded = fold("Con-\nﬁg  File")
    assert folded.text == "config" + "file"
    assert np.array_equal(folded.origin, [0, 1, 2, 5, 5, 6, 9, 10, 11, 12])


def test_questions_kept_apart_from_the_documents_and_documents_read_without_questions(tmp_path):
    folder = _folder(tmp_path / "docs", **{"a.md": "Alpha beta gamma.", "sub/b.txt": "Delta epsilon."})
    (tmp_path / "elsewhere.jsonl").write_text(OK)
    loader = FilesDataset(str(folder), parser(), questions=str(tmp_path / "elsewhere.jsonl"))
    assert [query.id for query in loader.load().queries] == ["q"]
    assert sorted(loader.read_documents()) == ["a.md", "sub/b.txt"]  # no questions file needed
    for given, said in ((tmp_path / "missing.jsonl", "does not exist"), (folder / "a.md", "a .jsonl or .csv")):
        with pytest.raises(DatasetError, match=f"dataset.questions=.*{said}"):
            FilesDataset(str(folder), parser(), questions=str(given)).load()


def test_a_quote_lost_by_every_parser_of_a_sweep_is_a_problem_of_the_dataset():
    def parse(text: str, *lost: tuple[str, ...]) -> Dataset:
        document = Document("a.pdf", text)
        queries = [Query(f"q{i}", "?", () if gone else (Span("a.pdf", 0, 2),), lost=gone)
                   for i, gone in enumerate(lost)]
        return Dataset("filings", {"a.pdf": document}, queries)

    pdfium = parse("pdfium's text", (), ("quote one",), ("quote two",))
    pdfminer = parse("pdfminer's text", ("quote zero",), ("quote one",), ())
    assert lost_in_every_text([pdfium, pdfminer]) == {"filings": ["q1"]}
    assert lost_in_every_text([pdfium]) == {}  # one parser: its own warning says what it lost
    assert lost_in_every_text([pdfium, parse("pypdf's text", (), (), ())]) == {}  # another parser found them all
