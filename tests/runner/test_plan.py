"""Each rule about which stages a job has, read from `plan_job` alone: nothing built, no Hydra global read."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import open_dict

from ragsweep.runner.errors import ConfigError
from ragsweep.runner.plan import JobNaming, plan_job

CONF = Path(__file__).resolve().parents[2] / "conf"
JUDGES = ("lexical", "embedding")


def _compose(*overrides: str, hydra: bool = False):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=hydra)


def _whole(*overrides: str):
    cfg = _compose("retriever=dense", *overrides)
    cfg.retriever = {"_target_": "ragsweep.retrieval.own.OwnRetriever",
                     "component": {"_target_": "tests.own_components.sotu_bm25", "chunk_size": 400, "k": 5}}
    return cfg


def test_a_whole_retriever_has_no_chunker_or_store_in_its_stages_config_or_params():
    plan = plan_job(_whole(), JobNaming("retriever=lc", None, {"retriever": "lc", "chunker": "recursive",
                                                               "store": "numpy"}))
    assert plan.whole_retriever and plan.unused == ("chunker", "store")
    assert "chunker" not in plan.stages and "store" not in plan.stages and "retriever" in plan.stages
    assert "chunker" not in plan.config and "store" not in plan.config
    assert not any(key.split(".")[0] in ("chunker", "store") for key in plan.params)
    assert plan.params["retriever"] == "lc"
    # control: a retriever that searches a store keeps both
    plain = plan_job(_compose("retriever=dense"))
    assert not plain.whole_retriever and {"chunker", "store"} <= set(plain.stages)


def test_no_generator_means_no_judge_and_the_judge_leaves_the_config_and_the_fingerprint():
    retrieval_only = [plan_job(_compose("generator=none", f"judge={judge}")) for judge in JUDGES]
    assert not any(plan.generates or plan.judges for plan in retrieval_only)
    assert all("judge" not in plan.config and "judge" not in plan.stages for plan in retrieval_only)
    assert retrieval_only[0].fingerprint("data") == retrieval_only[1].fingerprint("data")
    assert "answer" not in retrieval_only[0].metric_stages and "judged" not in retrieval_only[0].metric_stages
    answered = [plan_job(_compose("generator=extractive", f"judge={judge}")) for judge in JUDGES]
    assert all(plan.generates and plan.judges for plan in answered)
    assert answered[0].fingerprint("data") != answered[1].fingerprint("data")
    assert {"answer", "judged"} <= answered[0].metric_stages


def test_judge_none_beside_a_generator_judges_nothing_but_stays_a_choice_of_the_config():
    plan = plan_job(_compose("generator=extractive", "judge=none"))
    assert plan.generates and not plan.judges and "judged" not in plan.metric_stages
    assert plan.config.judge._target_.endswith("NoJudge")  # fingerprinted as before: stores keep matching


def test_a_relevance_judge_runs_with_or_without_a_generator_and_none_is_dropped():
    assert plan_job(_compose("generator=none", "relevance_judge=lexical")).judges_relevance
    plan = plan_job(_compose("relevance_judge=none"))
    assert not plan.judges_relevance and "relevance_judge" not in plan.config


def test_the_depth_that_runs_is_the_largest_of_k_candidates_and_depth():
    assert plan_job(_compose("k=5", "depth=3")).depth == 5
    assert plan_job(_compose("k=5", "depth=50", "reranker=embedding", "reranker.candidates=20")).depth == 50
    plan = plan_job(_compose("k=5", "depth=3", "reranker=embedding", "reranker.candidates=20"))
    assert (plan.depth, plan.candidates, plan.config.depth, plan.resolved["depth"]) == (20, 20, 20, 20)
    assert plan_job(_compose("reranker=embedding", "~reranker.candidates")).candidates == 20  # constructor's
    assert plan_job(_compose("reranker=none")).candidates == 0


@pytest.mark.parametrize(("overrides", "message"), [
    (["k=0"], "k must be a positive integer"),
    (["depth=-1"], "depth must be a positive integer"),
    (["reranker=embedding", "reranker.candidates=3", "k=5"], r"reranker.candidates \(3\) must be >= k \(5\)"),
    (["+kk=3"], "kk: no stage reads this key"),
])
def test_a_plan_refuses_what_cannot_run_before_anything_is_built(overrides, message):
    with pytest.raises(ConfigError, match=message):
        plan_job(_compose(*overrides))


def test_the_label_and_params_come_from_the_naming_given_not_from_hydras_globals():
    cfg = _compose("chunker=fixed", "k=3", hydra=True)
    assert not HydraConfig.initialized()
    naming = JobNaming.from_hydra(cfg.hydra)
    with open_dict(cfg):
        del cfg["hydra"]
    plan = plan_job(cfg, naming)
    assert plan.label == "chunker=fixed,k=3" and plan.sweep == "adhoc"
    assert plan.params["chunker"] == "fixed" and plan.params["k"] == 3
    assert "paths" not in plan.params  # a group that changes no number is no choice logged
    assert plan_job(cfg).label == "run"  # no naming: a run outside Hydra
    assert plan.targets["chunker"].endswith("FixedTokenChunker")


def test_the_plans_config_is_read_only_so_no_stage_can_change_what_was_fingerprinted():
    plan = plan_job(_compose())
    with pytest.raises(Exception, match="read-only"):
        plan.config.k = 99


# Computed by the runner before the plan existed (commit dface42, which normalised the config inside `run`):
# MLflow stores and stage caches made then are matched by these, so a change here is a breaking change.
FINGERPRINTS_BEFORE_THE_PLAN = {
    (): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("generator=extractive", "judge=lexical"): "cb9b8d4b756c3845479b7dd5191bc2187f48dd600946741069f52f01f8e1daae",
    ("generator=none", "judge=lexical"): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("reranker=embedding", "k=5", "depth=3"): "8a9bc3348e220d54a5efa1a82115fb3e31ddf0d656842890fdccd33e673fecbe",
    ("relevance_judge=lexical",): "be2cc9141fcf92626cb7df36ad260ffe0025dc52a23757161b431c60092c1d89",
    ("generator=extractive", "judge=none"): "11f95779809693fb22f474d4ddf24feee10d1903cb85c7c38349680519620c77",
}


@pytest.mark.parametrize("overrides", list(FINGERPRINTS_BEFORE_THE_PLAN))
def test_fingerprints_are_those_existing_stores_were_made_with(overrides):
    cfg = _compose(*overrides, "paths.root=/tmp/fpx")
    assert plan_job(cfg).fingerprint("data") == FINGERPRINTS_BEFORE_THE_PLAN[overrides]
