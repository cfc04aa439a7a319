"""What a job records about itself: the depth that ran, and a warning when chunking cannot matter."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.preloaded import run_command

ROOT = Path(__file__).resolve().parents[2]
WHOLE_DOCUMENTS = "is a single chunk"


def _job_params(store: Path) -> list[dict[str, str]]:
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{store}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"], filter_string="tags.`ragsweep.role` = 'job'")
    return [{key.removeprefix("params."): value for key, value in row.items() if key.startswith("params.")}
            for _, row in runs.iterrows()]


def test_a_depth_below_k_is_recorded_as_the_depth_that_ran(tmp_path, monkeypatch):
    from hydra import compose, initialize_config_dir

    from ragsweep.runner.plan import plan_job
    from ragsweep.runner.run import RunContext, run

    monkeypatch.chdir(tmp_path)
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["retriever=bm25", "k=5", "depth=3"])
    run(plan_job(cfg), RunContext(tmp_path / "out"))
    assert [params["depth"] for params in _job_params(tmp_path)] == ["5"]
    assert "depth: 5" in (tmp_path / "out" / "config.yaml").read_text()


def test_a_repair_is_said_in_one_line_and_each_moved_span_listed_in_the_output_folder(tmp_path, monkeypatch,
                                                                                        caplog):
    """dataset.on_span_mismatch=repair changes the user's data: the job says how many spans moved, the largest move
    and where each is listed (the run's output folder, whose files the run logs), not only a count in MLflow."""
    from hydra import compose, initialize_config_dir

    from ragsweep.runner.plan import plan_job
    from ragsweep.runner.run import RunContext, run

    text = "The quick brown fox jumps over the lazy dog. " * 3
    data = tmp_path / "data"
    (data / "documents").mkdir(parents=True)
    (data / "documents" / "a.txt").write_text(text)
    references = [{"doc_id": "a", "start": 5, "end": 20, "content": "quick brown fox"},  # one late
                  {"doc_id": "a", "start": 38, "end": 46, "content": "lazy dog"}]  # three late
    (data / "queries.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "question": "What?", "references": [ref]})
                                                + "\n" for i, ref in enumerate(references)))
    monkeypatch.chdir(tmp_path)
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["dataset=native", f"dataset.path={data}", "retriever=bm25", "k=1",
                                           "dataset.on_span_mismatch=repair"])
    run(plan_job(cfg), RunContext(tmp_path / "out"))
    listed = tmp_path / "out" / "spans_repaired.jsonl"
    queries = data / "queries.jsonl"
    said = [record.getMessage() for record in caplog.records if "on_span_mismatch=repair" in record.getMessage()]
    assert said == [f"dataset.on_span_mismatch=repair moved 2 of the 2 reference spans of data to their text, the "
                    f"largest by 3 character(s) ({queries}:2 references[0]); each moved span is listed in {listed}"]
    assert [json.loads(line) for line in listed.read_text().splitlines()] == [
        {"where": f"{queries}:1 references[0]", "doc_id": "a", "given": [5, 20], "moved": [4, 19], "by": -1},
        {"where": f"{queries}:2 references[0]", "doc_id": "a", "given": [38, 46], "moved": [35, 43], "by": -3}]


def _sweep(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}
    return run_command([sys.executable, str(ROOT / "sweep.py"), *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture
def small_documents(tmp_path) -> Path:
    """Two short documents, each shorter than the default chunk size."""
    data = tmp_path / "data"
    (data / "documents").mkdir(parents=True)
    (data / "documents" / "a.txt").write_text("The quick brown fox jumps over the lazy dog. " * 3)
    (data / "documents" / "b.txt").write_text("A journey of a thousand miles begins with a single step. " * 3)
    query = {"id": "q1", "question": "What jumps?", "references": [{"doc_id": "a", "start": 4, "end": 19}]}
    (data / "queries.jsonl").write_text(json.dumps(query) + "\n")
    return data


@pytest.mark.slow
def test_chunkings_of_whole_documents_are_warned_about_once_per_sweep(small_documents, tmp_path):
    """Once, at the sweep's end, naming the chunkers, and only when every chunker of the sweep kept every document
    whole: the fixed chunker keeping them whole while the recursive one splits a document is no warning."""
    args = ["-m", "dataset=native", f"dataset.path={small_documents}", "retriever=bm25"]
    whole = _sweep(tmp_path, *args, "chunker=recursive,fixed", "k=1,2")
    assert whole.returncode == 0, whole.stderr[-3000:]
    said = whole.stdout + whole.stderr  # Hydra logs to stdout
    assert said.count(WHOLE_DOCUMENTS) == 1, whole.stdout[-3000:]
    assert "is a single chunk under each of the 2 chunkers that ran: chunker=recursive (chunker.size=200), " \
           "chunker=fixed (chunker.size=800)" in said, said[-3000:]
    split = _sweep(tmp_path, *args, "chunker.size=20", "k=1", "experiment=split")
    assert split.returncode == 0, split.stderr[-3000:]
    assert WHOLE_DOCUMENTS not in split.stdout + split.stderr
    (small_documents / "documents" / "a.txt").write_text("The quick brown fox jumps over the lazy dog. " * 40)
    mixed = _sweep(tmp_path, *args, "chunker=recursive,fixed", "k=1", "experiment=mixed")  # recursive splits a.txt
    assert mixed.returncode == 0, mixed.stderr[-3000:]
    assert WHOLE_DOCUMENTS not in mixed.stdout + mixed.stderr, mixed.stdout[-3000:]


def test_whole_documents_are_said_for_what_ran_since_the_last_time_naming_the_chunker(caplog):
    """A run's one chunker is named; what ran before the last warning is forgotten, so the next sweep is judged on
    its own chunkers."""
    from types import SimpleNamespace

    from ragsweep.runner.whole_documents import record_chunking, say_whole_documents
    from ragsweep.types import Dataset, Document, Query, Span

    dataset = Dataset("notes", {"a": Document("a", "One."), "b": Document("b", "Two words.")},
                      [Query("q", "?", (Span("a", 0, 3),))])
    fixed = SimpleNamespace(params={"chunker": "fixed", "chunker.size": 800}, targets={})
    sentence = SimpleNamespace(params={}, targets={"chunker": "ragsweep.chunking.sentence.SentenceChunker"})
    say_whole_documents()  # what other tests' jobs in this process chunked
    caplog.clear()
    record_chunking(fixed, dataset, 2)
    say_whole_documents()
    record_chunking(fixed, dataset, 2)
    record_chunking(sentence, dataset, 3)  # splits a document: no warning for this sweep
    say_whole_documents()
    record_chunking(fixed, dataset, 2)
    say_whole_documents()
    said = [record.getMessage() for record in caplog.records]
    assert said == 2 * ["every document of notes is a single chunk under chunker=fixed (chunker.size=800) (the longest "
                        "has 10 characters), so the chunks are the documents whatever the chunker and a comparison of "
                        "chunkers shows nothing; lower chunker.size"]


WORKERS = ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "retriever=bm25", "k=1"]


@pytest.mark.slow
def test_a_sweep_whose_jobs_ran_in_worker_processes_is_warned_once_naming_every_chunker(small_documents, tmp_path):
    """hydra/launcher=joblib: the jobs chunk in other processes, and the sweep's end reads what each recorded in its
    folder."""
    whole = _sweep(tmp_path, *WORKERS, "dataset=native", f"dataset.path={small_documents}", "chunker=fixed,recursive",
                   "chunker.size=1000")
    assert whole.returncode == 0, whole.stderr[-3000:]
    said = whole.stdout + whole.stderr
    assert said.count(WHOLE_DOCUMENTS) == 1, said[-3000:]
    assert "is a single chunk under each of the 2 chunkers that ran: chunker=fixed (chunker.size=1000), " \
           "chunker=recursive (chunker.size=1000) (the longest has 171 characters)" in said, said[-3000:]


@pytest.mark.slow
def test_a_sweep_in_worker_processes_where_one_chunker_split_a_document_is_not_warned(small_documents, tmp_path):
    """hydra/launcher=joblib: the recursive chunker (200 tokens) splits a.txt while the fixed one (800) keeps it
    whole, so the sweep is not warned, though neither job saw the other's chunking."""
    (small_documents / "documents" / "a.txt").write_text("The quick brown fox jumps over the lazy dog. " * 40)
    mixed = _sweep(tmp_path, *WORKERS, "dataset=native", f"dataset.path={small_documents}", "chunker=fixed,recursive")
    assert mixed.returncode == 0, mixed.stderr[-3000:]
    assert WHOLE_DOCUMENTS not in mixed.stdout + mixed.stderr, mixed.stdout[-3000:]
    records = [json.loads(path.read_text()) for path in sorted(tmp_path.rglob("chunking.json"))]
    assert [(record["chunker"], record["whole"]) for record in records] == [
        ("chunker=fixed (chunker.size=800)", True), ("chunker=recursive (chunker.size=200)", False)]


def test_a_sweeps_end_counts_only_its_own_records_and_says_nothing_when_a_job_left_none(tmp_path, caplog):
    """An earlier sweep's record in the same folder is not counted; a job that started a run but left no record
    (it failed first, or could not write it) may have split a document, so nothing is said; a record that cannot be
    written does not fail the job."""
    import time
    from types import SimpleNamespace

    from ragsweep.runner.whole_documents import RECORD, job_records, record_chunking, say_whole_documents
    from ragsweep.tracking.record import RECORD_FILE
    from ragsweep.types import Dataset, Document, Query, Span

    kept = {"dataset": "notes", "fingerprint": "f", "chunker": "chunker=fixed", "longest": 10, "whole": True}
    for number in range(4):
        (tmp_path / str(number)).mkdir()
    (tmp_path / "0" / RECORD).write_text(json.dumps({**kept, "chunker": "chunker=sentence", "whole": False}))
    os.utime(tmp_path / "0" / RECORD, (0, 0))  # an earlier sweep's
    since = time.time() - 1
    (tmp_path / "1" / RECORD_FILE).write_text("{}")
    (tmp_path / "1" / RECORD).write_text(json.dumps(kept))
    (tmp_path / "2" / RECORD).write_text(json.dumps({"chunker": None}))  # a whole retriever: no chunker
    assert job_records(tmp_path, since) == [kept, {"chunker": None}]
    (tmp_path / "3" / RECORD_FILE).write_text("{}")
    assert job_records(tmp_path, since) is None
    say_whole_documents()  # what other tests' jobs in this process chunked
    caplog.clear()
    dataset = Dataset("notes", {"a": Document("a", "One.")}, [Query("q", "?", (Span("a", 0, 3),))])
    fixed = SimpleNamespace(params={"chunker": "fixed"}, targets={})
    (tmp_path / "file").write_text("")
    record_chunking(fixed, dataset, 1, tmp_path / "file" / "job")  # no folder there: said, and the job goes on
    say_whole_documents(None)
    record_chunking(fixed, dataset, 1, tmp_path / "file" / "job")
    say_whole_documents()  # this process's own record still counts
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 3 and said[0] == said[1], said
    assert said[0].startswith(f"this job's chunking is not recorded in its folder, so a sweep whose jobs run in other "
                              f"processes (hydra/launcher=joblib) does not say at its end whether every document is a "
                              f"single chunk: cannot write {tmp_path / 'file' / 'job' / RECORD}: "), said[0]
    assert said[2].startswith("every document of notes is a single chunk under chunker=fixed"), said[2]


def test_a_job_returns_its_sweeper_one_value_or_one_per_metric():
    from ragsweep.runner.run import objective

    logged = {"ndcg": 0.5, "latency_ms_p95": 9.0}
    assert objective(logged, "ndcg") == 0.5
    assert objective(logged, ["ndcg", "latency_ms_p95"]) == [0.5, 9.0]  # one per direction of the study
    assert objective(logged, None) is None
    failed = objective(None, ["ndcg", "latency_ms_p95"])  # a failed job: Optuna records a failed trial
    assert len(failed) == 2 and all(math.isnan(value) for value in failed)
