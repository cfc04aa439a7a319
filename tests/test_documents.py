"""The user's path with documents as they are: `ragsweep init`, a folder of Markdown, HTML, Word, text and PDF files
with questions quoting their evidence, a sweep over parsers and chunkers, and the parser's effect."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.parsing.documents import QUOTE, filing_pages, html_page, word_file
from tests.preloaded import run_command

RAGSWEEP = Path(sys.executable).with_name("ragsweep")


def _env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}}


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> tuple[Path, str, str]:
    project = tmp_path_factory.mktemp("team") / "rag"
    done = run_command([str(RAGSWEEP), "init", str(project)], project.parent, _env())
    assert done.returncode == 0, done.stderr
    data = project / "data" / "my_data"
    (data / "docs").mkdir(parents=True)
    (data / "docs" / "guide.md").write_text("# Guide\n\n## Install\n\nRun pip install ragsweep in a fresh virtual "
                                            "environment.\n\n## Upgrade\n\nRun pip install -U ragsweep, then "
                                            "rerun your sweeps: their cache keys change with the version.\n")
    html_page(data / "docs" / "proxies.html")
    word_file(data / "release.docx")
    (data / "notes.txt").write_text("Deploys happen on Tuesdays, never on Fridays.\n")
    filing_pages(data / "filing.pdf")
    questions = [
        ("q1", "How do I install it?", "guide", "Run pip install ragsweep in a fresh virtual environment."),
        ("q2", "What happens after an upgrade?", "guide", "rerun your sweeps: their cache keys change"),
        ("q3", "Are environment variables read for proxies?", "docs/proxies.html",
         "environment variables are read too, unless trust_env is false"),
        ("q4", "What do SOCKS proxies need?", "proxies", "SOCKS proxies need the socks extra"),
        ("q5", "When is a release tagged?", "release.docx", "Every release is tagged from main"),
        ("q6", "What is on the release checklist?", "release", "Bump the version number"),
        ("q7", "When do deploys happen?", "notes", "Deploys happen on Tuesdays"),
        ("q8", "How much did 3M spend on property, plant and equipment?", "filing", QUOTE),
        ("q9", "Which platform runs on ubuntu?", "release", "| Linux | ubuntu-24.04 |"),
        ("q10", "When are deploys never made?", "notes.txt", "never on Fridays"),
        ("q11", "What is the rollback plan?", "notes.txt", "Roll back by redeploying the previous tag from main."),
    ]
    (data / "questions.jsonl").write_text("".join(
        json.dumps({"id": id_, "question": text, "evidence": [{"doc": doc, "quote": quote}]}) + "\n"
        for id_, text, doc, quote in questions))
    sweep = run_command([str(RAGSWEEP), "sweep", "-m", "dataset=my_data", "parser=pdfium,pdfminer",
                         "chunker=recursive,sections", "chunker.size=40", "k=2", "retriever=bm25"], project, _env())
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    effects = run_command([str(RAGSWEEP), "effects", "--metric", "token_recall"], project, _env())
    assert effects.returncode == 0, effects.stderr[-3000:]
    return project, sweep.stdout + sweep.stderr, effects.stdout


def test_a_folder_of_files_sweeps_over_parsers_and_chunkers(swept):
    project, summary, _ = swept
    rows = [line for line in summary.splitlines() if "FINISHED" in line]
    assert len(rows) == 4 and all("parser=" in row and "chunker=" in row for row in rows)
    runs = [json.loads(path.read_text()) for path in (project / "outputs" / "multirun").rglob("metrics.json")]
    assert len(runs) == 4
    # every quote found, whichever parser, but q11's, which no document holds
    assert all(run["evidence_located"]["mean"] == pytest.approx(10 / 11) for run in runs)
    assert summary.count("the evidence of 1 question(s) (q11) is in none of the sweep's parsed texts") == 1
    records = [json.loads(line) for path in (project / "outputs" / "multirun").rglob("per_query.jsonl")
               for line in path.read_text().splitlines()]
    q8 = [item for record in records if record["id"] == "q8" for item in record["retrieved"]
          if item["doc_id"] == "filing.pdf"]
    assert q8 and all(item["pages"] in ([1], [2], [1, 2]) for item in q8)  # a PDF's chunk knows its pages


def test_effects_name_the_parser(swept):
    _, _, effects = swept
    assert "| parser  | pdfium" in effects and "| parser  | pdfminer" in effects
    assert "| chunker | sections" in effects


def test_the_parsed_files_are_cached_once_per_parser(swept):
    project, _, _ = swept
    entries = list((project / ".cache").rglob("parsed/*/*.npz"))
    assert len(entries) == 5 + 1  # five files by pdfium's option, and the PDF again by pdfminer's
