"""The list rewriters on the default install: `query/generator=transformers` (SmolLM2 through transformers, nothing
compiled), whose JSON list llguidance holds to its schema. (SmolLM2-135M rewrites poorly; these tests check that the
lists come and are read, not what they say.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conf_options import compose_option, instantiate_group

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ["When was the Harbour Bridge opened, and who opened it?", "How many lanes does the bridge carry?"]


@pytest.mark.parametrize(("option", "count"), [("multi_query", "query.n=2"), ("decompose", "query.max_questions=2")])
def test_a_list_rewriter_through_transformers_gives_a_list_of_rewrites(option, count):
    cfg = compose_option("query", option, "query/generator=transformers", count, "~query.max_failure_rate",
                         "query.generator.max_tokens=96")
    (rewrite,) = instantiate_group(cfg, "query").rewrite(QUESTIONS[:1])
    assert rewrite.error is None  # a JSON list, read at the first ask
    assert rewrite.texts[0] == QUESTIONS[0] and 2 <= len(rewrite.texts) <= 3  # the question and at most 2 more
    assert all(any(character.isalnum() for character in text) for text in rewrite.texts)
    assert rewrite.completion_tokens < 96  # the list closed before max_tokens


def test_a_sweep_job_rewrites_with_transformers_and_searches_every_rewrite(tmp_path):
    """`query=multi_query query/generator=transformers`, run as a sweep's job: no rewrite fails, each question is
    searched with itself and its rewrites."""
    from hydra import compose, initialize_config_dir

    from ragsweep.runner.plan import plan_job
    from ragsweep.runner.run import RunContext, run

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["retriever=bm25", "k=3", "dataset.limit=2", "query=multi_query",
                                           "query/generator=transformers", "query.n=2", "query.generator.max_tokens=64",
                                           f"paths.root={tmp_path}"])
    run(plan_job(cfg), RunContext(tmp_path / "job"))
    metrics = json.loads((tmp_path / "job" / "mlflow_run.json").read_text())["metrics"]
    records = [json.loads(line) for line in (tmp_path / "job" / "per_query.jsonl").read_text().splitlines()]
    assert metrics["query_failure_rate"] == 0.0 and metrics["query_texts_mean"] > 1
    assert all(record["query"]["error"] is None and record["query"]["texts"][0] == record["question"]
               for record in records)
