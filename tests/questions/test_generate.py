"""`ragsweep generate` end to end with the real local model (SmolLM2-135M through llama.cpp).

SmolLM2's questions are too poor to pass the default filters (docs/questions.md: measured yield), so
these tests check the mechanics with the quality filters loosened: every kept span is exact, the same seed
gives the same set, a killed run resumes from its cached drafts, and the set loads and sweeps.
The filters themselves are tested on hand-built cases in test_drafts.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragsweep.data.native import NativeDataset
from tests.preloaded import run_command

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = {
    "mill": "Ann Hale built the water mill at Cray in 1820. It ground wheat for four villages. "
            "A flood in 1852 broke its wheel, and the mill stood idle for six years. "
            "Her grandson Tom repaired the wheel in 1858 with oak from the Weald.",
    "canal": "The Leeds board approved the new canal on 4 March 1901. It would carry coal from the northern pits "
             "to the port of Hull. Work began the following spring. The canal cost 41,000 pounds, twice the "
             "estimate, and opened in 1905.",
}
LOOSE = ["generator=llama_cpp", "passages.size=40", "attempts_per_question=1", "filters.min_excerpt_relevance=0",
         "filters.max_duplicate_similarity=1", "filters.round_trip_k=0", "judge=none"]  # llama.cpp: not the default

pytestmark = [pytest.mark.slow, pytest.mark.llama_cpp]


@pytest.fixture(scope="module")
def documents(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("documents")
    for doc_id, text in DOCUMENTS.items():
        (folder / f"{doc_id}.txt").write_text(text, encoding="utf-8")
    return folder


def command(documents: Path, out: Path, cache: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "ragsweep.cli", "--project", str(ROOT), "generate", "--documents", str(documents),
            "--out", str(out), "--questions-per-document", "2", *LOOSE, f"cache.dir={cache}", *extra]


def generate(documents: Path, out: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_command(command(documents, out, cache, *extra), Path.cwd(), {**os.environ, "HF_HUB_OFFLINE": "1"},
                       timeout=600)


@pytest.fixture(scope="module")
def generated(documents, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("generated") / "set"
    done = generate(documents, out, out.parent / "cache")
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def test_every_kept_question_has_exact_spans_and_the_report_adds_up(generated, documents):
    records = [json.loads(line) for line in (generated / "queries.jsonl").read_text().splitlines()]
    assert records, "no question kept"
    for record in records:
        text = (documents / f"{record['corpus']}.txt").read_text(encoding="utf-8")
        for reference in record["references"]:
            assert text[reference["start"]:reference["end"]] == reference["content"]
        assert record["question"].endswith("?") and record["type"] and record["difficulty"]
    dataset = NativeDataset(str(generated)).load()  # on_span_mismatch=error: any shifted span fails here
    assert len(dataset.queries) == len(records)
    report = json.loads((generated / "generation_report.json").read_text())
    assert report["questions_kept"] == len(records) == sum(d["kept"] for d in report["per_document"].values())
    assert report["passages_tried"] == len(records) + sum(report["dropped"].values())
    assert report["questions_wanted"] == 4 and set(report["per_document"]) == set(DOCUMENTS)
    assert sum(report["mix"]["type"]["achieved"].values()) == len(records)
    assert report["mean_excerpt_tokens"] > 0 and report["sample_kept"]
    page = (generated / "generation_report.md").read_text()
    assert "## Dropped, by the first check each draft failed" in page and records[0]["question"] in page or \
        len(records) > 10


def test_the_same_seed_gives_the_same_set_and_a_killed_run_resumes(generated, documents, tmp_path):
    out, cache = tmp_path / "set", tmp_path / "cache"
    run = subprocess.Popen(command(documents, out, cache), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "HF_HUB_OFFLINE": "1"}, start_new_session=True)
    deadline = time.monotonic() + 300
    while not list((cache / "question_drafts").rglob("*.npz")) and time.monotonic() < deadline:
        assert run.poll() is None, "generate finished before it could be killed"
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    assert not (out / "queries.jsonl").exists()
    done = generate(documents, out, cache)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((out / "generation_report.json").read_text())
    assert report["drafts"]["from_cache"] >= 1  # what the killed run finished is not drafted again
    assert report["drafts"]["generated"] == report["passages_tried"] - report["drafts"]["from_cache"]
    # another cache, interrupted once: the same questions and spans as the first run
    assert (out / "queries.jsonl").read_text() == (generated / "queries.jsonl").read_text()


def test_the_generated_set_sweeps(generated, scratch_project, tmp_path):
    project = scratch_project(tmp_path / "project")
    done = run_command([sys.executable, "sweep.py", "dataset=native", f"dataset.path={generated}", "generator=none",
                        "k=2", "chunker.size=40", f"paths.root={project}"], project,
                       {**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    metrics = json.loads(next((project / "outputs").rglob("metrics.json")).read_text())
    assert metrics["token_recall"]["n"] == len((generated / "queries.jsonl").read_text().splitlines())


def test_questions_from_a_folder_of_files_quote_their_evidence_and_sweep_with_any_parser(generated, scratch_project,
                                                                                         tmp_path):
    """`--dataset files`: the folder's files as the parser reads them (a Markdown file, a text file in a subfolder),
    and questions.jsonl quoting the evidence, which `dataset=files` finds again, whichever parser reads the folder."""
    folder = tmp_path / "team"
    (folder / "sub").mkdir(parents=True)
    (folder / "mill.md").write_text(DOCUMENTS["mill"], encoding="utf-8")
    (folder / "sub" / "canal.txt").write_text(DOCUMENTS["canal"], encoding="utf-8")
    out = tmp_path / "set"
    done = run_command([sys.executable, "-m", "ragsweep.cli", "--project", str(ROOT), "generate", "--dataset", "files",
                        "--out", str(out), "--questions-per-document", "2", *LOOSE,
                        f"cache.dir={generated.parent / 'cache'}", f"dataset.path={folder}"], Path.cwd(),
                       {**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "dataset=files" in done.stdout
    quoted = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert quoted and {item["doc"] for line in quoted for item in line["evidence"]} <= {"mill.md", "sub/canal.txt"}
    project = scratch_project(tmp_path / "project")
    swept = run_command([sys.executable, "sweep.py", "-m", "dataset=files", f"dataset.path={folder}",
                         f"dataset.questions={out / 'questions.jsonl'}", "parser=pdfium,pypdf", "retriever=bm25",
                         "k=1", "chunker.size=40", f"paths.root={project}"], project,
                        {**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)
    assert swept.returncode == 0, swept.stderr[-2000:]
    for path in (project / "outputs").rglob("metrics.json"):
        assert json.loads(path.read_text())["evidence_located"]["mean"] == 1.0


def test_bad_settings_fail_before_any_work(documents, tmp_path):
    done = generate(documents, tmp_path / "set", tmp_path / "cache", "filters.round_trip_k=-1")
    assert done.returncode == 2 and "filters.round_trip_k must be an integer >= 0" in done.stderr
    done = generate(documents, tmp_path / "set", tmp_path / "cache", "filters.min_relevance=0.5")
    assert done.returncode == 2 and "Could not override 'filters.min_relevance'" in done.stderr  # Hydra's refusal
    done = generate(documents, tmp_path / "set", tmp_path / "cache", "+filters.min_relevance=0.5")
    assert done.returncode == 2 and "filters.min_relevance: no such filter setting" in done.stderr
    done = generate(tmp_path / "missing", tmp_path / "set", tmp_path / "cache")
    assert done.returncode == 2 and "--documents=" in done.stderr and "does not exist" in done.stderr
    assert not (tmp_path / "set").exists() and not (tmp_path / "cache").exists()


def test_a_run_that_keeps_no_question_says_only_the_error(generated, documents):
    out = generated.parent / "none_kept"
    done = generate(documents, out, generated.parent / "cache", "filters.min_excerpt_relevance=1")  # drafts cached
    assert done.returncode == 1, done.stderr[-2000:]
    assert [line for line in done.stderr.splitlines() if line.startswith("ragsweep:")] == [
        f"ragsweep: error: no question was kept (dropped: {done.stderr.split('(dropped: ')[1].split(')')[0]}), so "
        f"no dataset was written; {out / 'generation_report.md'} says which check dropped them"]
    assert "excerpt_relevance" in done.stderr and "sweep it" not in done.stdout and "wrote" not in done.stdout
    assert sorted(path.name for path in out.iterdir()) == ["generation_report.json", "generation_report.md"]
