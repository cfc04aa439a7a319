"""The loop with a generator, as a user runs it: a real sweep with `generator=extractive`, then
`best --metric answer_f1 --verify`, `gate` on answer_f1 and `report`, each in a subprocess (about 2 minutes).
The sweep, the export and the report are module fixtures, so any one test also runs, and passes, alone."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.preloaded import run_command

pytestmark = pytest.mark.slow


def _run(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}  # entry points set them
    return run_command([sys.executable, *args], cwd=project, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def project(tmp_path_factory, scratch_project) -> Path:
    folder = scratch_project(tmp_path_factory.mktemp("generation"))
    swept = _run(folder, "sweep.py", "-m", "generator=extractive", "judge=lexical", "k=3,5")
    assert swept.returncode == 0, swept.stderr[-3000:]
    return folder


@pytest.fixture(scope="module")
def best(project) -> subprocess.CompletedProcess:
    """`best --metric answer_f1 --verify`: ranks the jobs, reruns the winner and exports it to conf/best/."""
    result = _run(project, "-m", "ragsweep.cli", "best", "--metric", "answer_f1", "--verify")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def report(project) -> Path:
    """`report --metric answer_f1`: the HTML page."""
    result = _run(project, "-m", "ragsweep.cli", "report", "--metric", "answer_f1")
    assert result.returncode == 0, result.stderr[-3000:]
    return project / "reports" / "ragsweep.html"


def test_best_ranks_by_answer_f1_and_its_verify_rerun_repeats_the_answers(project, best):
    rows = [line for line in best.stdout.splitlines() if line.startswith("| 1 ")]
    assert rows and "| extractive |" in rows[0]
    verified = {line.split("|")[1].strip(): line for line in best.stdout.splitlines() if "| True |" in line}
    assert {"answer_f1", "answer_correctness", "answer_tokens_mean", "generation_error_rate"} <= set(verified)
    assert "latency_ms_p50" not in verified  # milliseconds are not compared
    assert best.stdout.rstrip().endswith("verified: every metric of the rerun equals the recorded run")
    lines = (project / "conf" / "best" / "ragsweep.per_query.jsonl").read_text().splitlines()
    assert all("answer_f1" in json.loads(line)["metrics"] for line in lines)  # sotu_qa: every question has references


def test_gate_guards_answer_f1_on_a_rerun_and_shows_the_error_rate(project, best):
    result = _run(project, "-m", "ragsweep.cli", "gate", "--baseline", "conf/best/ragsweep.yaml",
                  "--metrics", "answer_f1,token_iou")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    row = next(line for line in result.stdout.splitlines() if line.startswith("| answer_f1 "))
    assert "| +0.0%    | 1.0     | ok" in row  # the rerun's answers come from the cache: equal numbers, p = 1
    assert "generation_error_rate (lower is better): recorded 0.0000, current 0.0000" in result.stdout
    assert "paired the" not in result.stdout  # every question has an answer metric in both


def test_report_on_answer_f1_has_the_answers_table_and_end_to_end_latency(report):
    page = report.read_text()
    assert "Answers and what they cost" in page and "<th>generation_ms_p50</th>" in page
    assert "search + rerank + generation per question" in page and "Not comparable" not in page
    assert page.count('src="data:image/png;base64,') == 5  # effects (of k), bars, k curves, Pareto, heatmap


def test_the_exported_best_retrieves_and_answers_in_python_as_its_run_did(project, best):
    import ragsweep
    from omegaconf import OmegaConf

    from ragsweep.data.sotu_qa import SotuQADataset

    k = OmegaConf.load(project / "conf" / "best" / "ragsweep.yaml").k
    folder = next(path.parent for path in (project / "outputs" / "multirun").glob("*/*/config.yaml")
                  if OmegaConf.load(path).k == k)
    records = [json.loads(line) for line in (folder / "per_query.jsonl").read_text().splitlines()[:5]]
    pipeline = ragsweep.load_pipeline(project / "conf" / "best" / "ragsweep.yaml")
    documents = {doc_id: document.text for doc_id, document in SotuQADataset().load().documents.items()}
    for record in records:
        passages = pipeline.retrieve(record["question"])
        assert [(p.doc_id, p.start, p.end) for p in passages] == [(h["doc_id"], h["start"], h["end"])
                                                                  for h in record["retrieved"]]
        assert all(p.text == documents[p.doc_id][p.start:p.end] for p in passages)
        assert pipeline.answer(record["question"]) == record["answer"]
    with pytest.raises(ragsweep.ConfigError, match="no-such.yaml: no such file; export one with `ragsweep best`"):
        ragsweep.load_pipeline(project / "conf" / "best" / "no-such.yaml")


def test_the_report_fits_a_1400_px_window_in_a_real_browser(report, tmp_path):
    from tests.test_loop import ARTIFACTS, CHROMIUM, _browser

    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: `make test` installs it (apt-get install chromium)"
    probe = tmp_path / "probe.html"  # the page as written, plus a script that measures how far it overflows
    measure = ("<script>document.body.dataset.overflow = String(document.documentElement.scrollWidth"
               " - document.documentElement.clientWidth)</script></body>")
    probe.write_text(report.read_text().replace("</body>", measure))
    overflow = re.search(r'data-overflow="(-?\d+)"', _browser(tmp_path, "--dump-dom", probe.as_uri()))
    assert overflow and int(overflow.group(1)) <= 0, "the report is wider than a 1400 px window"
    ARTIFACTS.mkdir(exist_ok=True)
    _browser(tmp_path, f"--screenshot={ARTIFACTS / 'report_generation.png'}", report.as_uri())
    assert (ARTIFACTS / "report_generation.png").stat().st_size > 10_000
