"""A real MLflow store (sqlite in a temp folder) holding job runs with hand-chosen per-question scores.

Each run looks like one a sweep logs: params (with the group choices), the tags `best`, `report`
and `gate` read, every metric's mean and `_std`, and the artifacts per_query.jsonl, metrics.json
and config.yaml. The scores are given per question, so expected numbers can be worked out by hand.
A run with a generator (`answers=`) also has the answer metrics (missing for questions whose
generation failed), the costs and the latency percentiles in metrics.json's `{value, n, ci95}` form.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from ragsweep.metrics.aggregate import summarize
from ragsweep.metrics.answers import ANSWER_METRICS
from ragsweep.metrics.evaluate import METRIC_KEYS
from ragsweep.tracking.tags import FINGERPRINT_TAG, LABEL_TAG
from ragsweep.tracking.mlflow_tracker import MlflowTracker
from ragsweep.per_query import HASH
from ragsweep.types import Query

CONF = Path(__file__).resolve().parents[2] / "conf"


class Store:
    """Logs fake job runs to a real store under `root`; `tracker` reads them back as the CLI does."""

    def __init__(self, root: Path, database: Path, experiment: str) -> None:
        self.root = root
        self.tracker = MlflowTracker(f"sqlite:///{database}", experiment, str(root / "mlruns" / "artifacts"))

    def job(self, label: str, scores: list[float], dataset: str = "sotu_qa", ids: list[str] | None = None,
            name: str | None = None, answers: list[float | None] | None = None,
            texts: list[str] | None = None) -> str:
        """One FINISHED job run: `label` like `chunker=fixed,k=3`; every metric of question i is scores[i].

        `name` is the MLflow run name when it differs from the label (a verify rerun of before labels).
        `answers` (label with `generator=extractive`): every answer metric of question i is answers[i], or
        none when it is None (its generation failed, counted in generation_error_rate). `texts`: the questions'
        texts (default `?`), which their hashes are of, as the runner records them (`Query.sha256`).
        """
        overrides = label.split(",")
        with initialize_config_dir(str(CONF), version_base="1.3"):
            cfg = compose("config", overrides=[*overrides, f"paths.root={self.root}"])
        resolved = OmegaConf.to_container(cfg, resolve=True)
        ids = ids or [f"q{i}" for i in range(len(scores))]
        per_query = [{name: float(score) for name in METRIC_KEYS} for score in scores]
        choices = {"chunker": cfg.chunker._target_.split(".")[-2], "dataset": dataset}
        if answers is not None:
            choices["generator"] = cfg.generator._target_.split(".")[-2]
            for scores_of, answer in zip(per_query, answers, strict=True):
                scores_of.update({} if answer is None else dict.fromkeys(ANSWER_METRICS, float(answer)))
        params = {"k": cfg.k, "chunker._target_": cfg.chunker._target_, **choices}
        tags = {"dataset.name": dataset, "dataset.fingerprint": f"{dataset}-data",
                FINGERPRINT_TAG: f"{label}|{dataset}", LABEL_TAG: label, "ragsweep.sweep": "adhoc"}
        folder = self.root / "jobs" / f"{label}-{dataset}"
        folder.mkdir(parents=True)
        files = [folder / "per_query.jsonl", folder / "metrics.json", folder / "config.yaml"]
        texts = texts or ["?"] * len(scores)
        records = [{"id": i, "question": text, HASH: Query(i, text, ()).sha256(), "references": [], "retrieved": [],
                    "metrics": m} for i, text, m in zip(ids, texts, per_query)]
        for record, answer in zip(records, answers or [], strict=False):  # what the runner adds with a generator
            failed = "timeout" if answer is None else None
            record.update(answer=None if failed else f"answer to {record['id']}", reference_answers=["reference"],
                          generation={"latency_ms": 100.0, "prompt_tokens": 0, "completion_tokens": 0, "error": failed})
        files[0].write_text("".join(json.dumps(record) + "\n" for record in records))
        summary = summarize(per_query, [None] * len(scores), 100)
        latency = {"latency_ms_p50": 1.0 + float(np.mean(scores)), "latency_ms_p95": 9.0}
        if answers is not None:  # as the runner logs a generator's costs, and end-to-end latency (+100 ms)
            costs = [{"generation_error_rate": 1.0} if answer is None else
                     {"generation_error_rate": 0.0, "answer_tokens_mean": 5.0} for answer in answers]
            summary.update(summarize(costs, [None] * len(scores), 100))
            latency = {"latency_ms_p50": 101.0 + float(np.mean(scores)), "latency_ms_p95": 190.0,
                       "generation_ms_p50": 100.0, "generation_ms_p95": 180.0}
            summary.update({name: {"value": value, "n": len(scores), "ci95": [value, value]}
                            for name, value in latency.items()})
        files[1].write_text(json.dumps(summary))
        files[2].write_text(OmegaConf.to_yaml(resolved))
        means = {m: s for m, s in summary.items() if "mean" in s}
        with self.tracker.start_run(name or label, params, tags) as run_id:
            self.tracker.log_metrics({**{m: s["mean"] for m, s in means.items()},
                                      **{f"{m}_std": s["std"] for m, s in means.items()}, **latency})
            self.tracker.log_artifacts(*files)
        return run_id


@pytest.fixture(scope="session")
def database(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mlflow") / "mlflow.db"  # one store: creating its tables takes seconds


@pytest.fixture
def store(tmp_path: Path, database: Path, request) -> Store:
    """A project folder of its own and an experiment of its own (named after the test) in the shared store."""
    shutil.copytree(CONF, tmp_path / "conf", symlinks=True, ignore=shutil.ignore_patterns("best"))  # as best reads it
    return Store(tmp_path, database, request.node.name)
