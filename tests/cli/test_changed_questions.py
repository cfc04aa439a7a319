"""The issue's case, as a user meets it: a baseline exported from a sweep, then its questions edited (one removed,
one reworded). `gate`, `best --verify` and `diff` name both and fail, unless `--on-changed-questions=compare-common`,
which compares the questions both runs have unchanged and says how many."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli.test_results import _jobs, _ragsweep, _run, write_questions

DOCS = {"apples": "Apples grow on trees. Most apples are red or green.",
        "rivers": "Rivers carry water to the sea. The Nile is a long river.",
        "stars": "Stars shine at night. The Sun is a star."}
QUESTIONS = [("t1", "What colour are apples?", "apples", "Most apples are red or green."),
             ("t2", "Where do rivers go?", "rivers", "Rivers carry water to the sea."),
             ("t3", "Which river is long?", "rivers", "The Nile is a long river."),
             ("t4", "Is the Sun a star?", "stars", "The Sun is a star.")]


@pytest.fixture(scope="module")
def project(tmp_path_factory, scratch_project) -> Path:
    """One job on a four-question dataset, exported as `base`; then t4 removed and t2 reworded."""
    folder = scratch_project(tmp_path_factory.mktemp("project"))
    data = folder / "data" / "four"
    (data / "documents").mkdir(parents=True)
    for name, text in DOCS.items():
        (data / "documents" / f"{name}.txt").write_text(text)
    write_questions(data, DOCS, QUESTIONS)
    swept = _run(folder, sys.executable, "sweep.py", "dataset=native", f"dataset.path={data}", "retriever=bm25", "k=1")
    assert swept.returncode == 0, swept.stderr[-3000:]
    exported = _ragsweep(folder, "best", "--name", "base")
    assert exported.returncode == 0, exported.stderr[-3000:]
    write_questions(data, DOCS, [QUESTIONS[0], (*QUESTIONS[1][:1], "Where do the rivers flow?", *QUESTIONS[1][2:]),
                            QUESTIONS[2]])
    return folder


CHANGED = "removed 1 (t4), changed (text, references or reference answers) 1 (t2)"


def test_the_gate_fails_on_a_removed_and_a_reworded_question_naming_both(project):
    exported = (project / "conf" / "best" / "base.per_query.jsonl").read_text().splitlines()
    assert [sorted(json.loads(line)) for line in exported] == [["id", "metrics", "question_sha256"]] * 4
    failed = _ragsweep(project, "gate", "--baseline", "conf/best/base.yaml")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert failed.stderr.splitlines()[-1] == (
        f"ragsweep: gate failed: the current run differs from the baseline in its questions: {CHANGED}; gate a run "
        "on the baseline's questions, or export a new baseline on these with `ragsweep best` once a sweep has run "
        "them, or pass --on-changed-questions=compare-common to compare the 2 questions both have unchanged")
    assert "gate passed" not in failed.stdout and "| token_iou" not in failed.stdout


def test_the_gate_compares_the_unchanged_questions_when_told_and_says_how_many(project):
    passed = _ragsweep(project, "gate", "--baseline", "conf/best/base.yaml", "--on-changed-questions=compare-common")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "a paired bootstrap on 2 of the baseline's 4 questions" in passed.stdout
    assert (f"note: the current run differs from the baseline in its questions: {CHANGED}; comparing the 2 questions "
            "both have unchanged (--on-changed-questions=compare-common)") in passed.stdout
    row = next(line for line in passed.stdout.splitlines() if line.startswith("| token_iou"))
    assert "| ok " in row
    assert passed.stdout.rstrip().endswith("gate passed")


def test_verify_and_diff_apply_the_same_rule(project):
    baseline = json.loads((project / "conf" / "best" / "base.manifest.json").read_text())["run_id"]
    verify = ["best", "--name", "again", "--where", f"run_id = {baseline}", "--verify"]
    refused = _ragsweep(project, *verify)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.splitlines()[-1].startswith(  # under the line saying what it reran
        f"ragsweep: error: the rerun differs from the recorded run in its questions: {CHANGED}; the dataset changed "
        "since the runs `best` ranked")
    verified = _ragsweep(project, *verify, "--on-changed-questions=compare-common")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "comparing the 2 questions both have unchanged" in verified.stdout
    assert "verified: every metric of the rerun equals the recorded run" in verified.stdout
    rerun = _jobs(project).run_id.iloc[0]  # the newest: verify's rerun, on the edited questions
    assert rerun != baseline
    refused = _ragsweep(project, "diff", baseline, rerun)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert CHANGED in refused.stderr and "--on-changed-questions=compare-common" in refused.stderr
    shown = _ragsweep(project, "diff", baseline, rerun, "--on-changed-questions", "compare-common")
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "2 questions in both" in shown.stdout and "comparing the 2 questions both have unchanged" in shown.stdout
