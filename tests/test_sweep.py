"""A real multirun on the embedded dataset, read back from the MLflow store and the job folders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragsweep.metrics import registry
from ragsweep.metrics.evaluate import METRIC_KEYS
from tests.preloaded import run_command

ROOT = Path(__file__).resolve().parents[1]


def _sweep(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}  # entry point sets them
    return run_command([sys.executable, str(ROOT / "sweep.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def _runs(cwd: Path):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{cwd}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"])
    return runs[runs["tags.ragsweep.role"] == "job"].reset_index(drop=True)  # not the sweep's parent run


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    cwd = tmp_path_factory.mktemp("sweep")
    result = _sweep(cwd, "-m", "chunker=recursive,fixed", "k=5,10")
    assert result.returncode == 0, result.stderr[-3000:]
    return cwd


def test_four_finished_runs_with_params_metrics_and_artifacts(swept):
    import mlflow

    runs = _runs(swept)
    assert sorted(runs["tags.mlflow.runName"]) == ["chunker=fixed,k=10", "chunker=fixed,k=5",
                                                   "chunker=recursive,k=10", "chunker=recursive,k=5"]
    assert set(runs.status) == {"FINISHED"}
    assert sorted(runs["params.k"]) == ["10", "10", "5", "5"]
    assert set(runs["params.chunker._target_"]) == {"ragsweep.chunking.fixed.FixedTokenChunker",
                                                    "ragsweep.chunking.recursive.RecursiveChunker"}
    for key in METRIC_KEYS:
        assert runs[f"metrics.{key}"].between(*registry.metric(key).bounds).all(), key
    assert runs["tags.dataset.fingerprint"].str.len().eq(64).all()
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(runs.run_id[0])}
    assert artifacts == {"config.yaml", "metrics.json", "per_query.jsonl", "latency.json"}
    assert runs.artifact_uri[0].startswith((swept / "mlruns").resolve().as_uri())


def test_job_folders_hold_the_output_contract(swept):
    jobs = sorted((swept / "outputs" / "multirun").glob("*/*/metrics.json"))
    assert len(jobs) == 4
    for metrics_path in jobs:
        metrics = json.loads(metrics_path.read_text())
        assert list(metrics) == [*METRIC_KEYS, "context_relevance", "cost_per_question", "cost_total"]
        assert metrics.pop("cost_total") == {"value": 0.0, "n": 68}  # no prices given
        for name, summary in metrics.items():
            # context_relevance: only questions with a passage the span rule labels (holds half a reference, or none)
            assert set(summary) == {"mean", "std", "ci95", "per_corpus", "n"}
            assert summary["n"] == 68 if name != "context_relevance" else 0 < summary["n"] <= 68
            assert summary["ci95"][0] <= summary["mean"] <= summary["ci95"][1]
            assert len(summary["per_corpus"]) == 6
        config = (metrics_path.parent / "config.yaml").read_text()
        k = 10 if "k: 10" in config else 5
        lines = (metrics_path.parent / "per_query.jsonl").read_text().splitlines()
        assert len(lines) == 68
        record = json.loads(lines[0])
        assert list(record) == ["id", "question", "question_sha256", "references", "retrieved", "metrics", "relevance"]
        assert list(record["references"][0]) == ["doc_id", "start", "end"]
        assert len(record["retrieved"]) == k and len(record["relevance"]["labels"]) == k
        assert list(record["retrieved"][0]) == ["doc_id", "start", "end", "score"]
        assert list(record["metrics"])[:len(METRIC_KEYS)] == list(METRIC_KEYS)


def test_each_job_is_composed_by_ragsweeps_launcher_as_hydra_composes_it(swept):
    from omegaconf import OmegaConf

    from ragsweep.runner.compose import compose_config

    for folder in sorted((swept / "outputs" / "multirun").glob("*/[0-9]*")):
        overrides = OmegaConf.load(folder / ".hydra" / "overrides.yaml")
        hydra = OmegaConf.load(folder / ".hydra" / "hydra.yaml").hydra
        assert hydra.runtime.choices["hydra/launcher"] == "ragsweep"
        assert OmegaConf.load(folder / ".hydra" / "config.yaml") == compose_config(ROOT / "conf", list(overrides))


def test_bigger_k_never_lowers_recall(swept):
    runs = _runs(swept).set_index("tags.mlflow.runName")
    for chunker in ("recursive", "fixed"):
        assert runs.loc[f"chunker={chunker},k=10", "metrics.recall"] >= runs.loc[f"chunker={chunker},k=5", "metrics.recall"]


def test_a_crash_mid_run_is_recorded_as_failed(tmp_path, monkeypatch):
    from hydra import compose, initialize_config_dir

    from ragsweep.retrieval.dense import DenseRetriever
    from ragsweep.runner.plan import plan_job
    from ragsweep.runner.run import RunContext, run

    def broken_search(self, questions, k):
        raise RuntimeError("index exploded")

    monkeypatch.setattr(DenseRetriever, "search", broken_search)
    monkeypatch.chdir(tmp_path)
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["chunker=fixed"])
    with pytest.raises(RuntimeError, match="index exploded"):
        run(plan_job(cfg), RunContext(tmp_path / "out"))
    assert list(_runs(tmp_path).status) == ["FAILED"]


def test_a_repeated_sweep_is_served_from_the_cache(tmp_path):
    args = ["-m", "retriever=dense,hybrid", "store=numpy,qdrant", "experiment=cached"]
    for extra in ([], ["+force=true"]):  # forced: the finished configurations would be skipped otherwise
        result = _sweep(tmp_path, *args, *extra)
        assert result.returncode == 0, result.stderr[-3000:]
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["cached"], filter_string="tags.`ragsweep.role` = 'job'")
    runs = runs.sort_values("start_time")
    first, second = runs.iloc[:4], runs.iloc[4:]
    assert first["metrics.cache_misses_embeddings"].sum() > 0  # chunks and questions embedded once...
    assert first["metrics.cache_misses_embeddings"].fillna(0).iloc[1:].sum() == 0  # ...by the first job only
    assert second["metrics.cache_misses_embeddings"].fillna(0).sum() == 0
    # one cached list per dense job, one per side of each hybrid job (fused at the requested depth)
    assert second["metrics.cache_misses_retrieval"].sum() == 0 and second["metrics.cache_hits_retrieval"].sum() == 6
    by_name = lambda frame: frame.set_index("tags.mlflow.runName")["metrics.ndcg"].sort_index()  # noqa: E731
    assert by_name(first).equals(by_name(second))


def test_points_that_differ_only_in_groups_no_stage_takes_run_once(tmp_path):
    result = _sweep(tmp_path, "-m", "retriever=bm25", "embedder=minilm,static", "store=numpy,chroma", "k=3,5")
    assert result.returncode == 0, result.stderr[-3000:]
    runs = _runs(tmp_path)
    assert sorted(runs["tags.mlflow.runName"]) == ["k=3,retriever=bm25", "k=5,retriever=bm25"]
    assert not runs.filter(regex=r"^params\.(embedder|store)").notna().any().any()  # BM25 took neither
    assert "2 of 8 points run: 6 folded into a configuration another point runs" in result.stdout + result.stderr


def test_cache_off_stores_nothing(tmp_path):
    result = _sweep(tmp_path, "cache=off", "retriever=bm25")
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / ".cache").exists()


def test_a_failed_run_still_records_its_config(tmp_path, monkeypatch):
    from hydra import compose, initialize_config_dir

    from ragsweep.retrieval.dense import DenseRetriever
    from ragsweep.runner.plan import plan_job
    from ragsweep.runner.run import RunContext, run

    monkeypatch.setattr(DenseRetriever, "index", lambda self, chunks: (_ for _ in ()).throw(MemoryError("too big")))
    monkeypatch.chdir(tmp_path)
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["chunker=sentence", "k=3"])
    with pytest.raises(MemoryError):
        run(plan_job(cfg), RunContext(tmp_path / "out"))
    runs = _runs(tmp_path)
    assert len(runs) == 1 and runs.loc[0, "status"] == "FAILED"
    assert runs.loc[0, "params.k"] == "3" and runs.loc[0, "params.chunker._target_"].endswith("SentenceChunker")


def test_two_copies_of_a_sweep_started_together_run_each_configuration_once(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}
    command = [sys.executable, str(ROOT / "sweep.py"), "-m", "retriever=bm25", "k=1,2,3", "experiment=twice"]
    copies = [subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True) for _ in range(2)]
    outputs = [copy.communicate(timeout=900) for copy in copies]
    assert [copy.returncode for copy in copies] == [0, 0], [err[-3000:] for _, err in outputs]
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlruns/mlflow.db")
    jobs = mlflow.search_runs(experiment_names=["twice"], filter_string="tags.`ragsweep.role` = 'job'")
    assert sorted(jobs["tags.mlflow.runName"]) == ["k=1,retriever=bm25", "k=2,retriever=bm25", "k=3,retriever=bm25"]
    assert set(jobs.status) == {"FINISHED"}
    said = "".join(out + err for out, err in outputs)
    assert said.count("is being run by another process; waiting for it") + said.count("already finished") >= 3, said
