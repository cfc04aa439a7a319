"""Each rule about which stages a job has, read from `plan_job` alone: nothing built, no Hydra global read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf, open_dict

from ragsweep.runner.errors import ConfigError
from ragsweep.runner.plan import JobNaming, plan_job

CONF = Path(__file__).resolve().parents[2] / "conf"
SKIPPED = ("sweep", "paths")  # a grid of jobs, and where files go: neither is part of a job's identity
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
    assert plan.whole_retriever and plan.unused == ("chunker", "embedder", "store")  # nothing it builds takes one
    assert "chunker" not in plan.stages and "store" not in plan.stages and "retriever" in plan.stages
    assert "chunker" not in plan.config and "store" not in plan.config
    assert not any(key.split(".")[0] in ("chunker", "store") for key in plan.params)
    assert plan.params["retriever"] == "lc"
    # control: a retriever that searches a store keeps both
    plain = plan_job(_compose("retriever=dense"))
    assert not plain.whole_retriever and {"chunker", "store"} <= set(plain.stages)


def test_an_embedder_or_store_no_stage_takes_leaves_the_config_the_params_the_label_and_the_fingerprint():
    def plan(*overrides: str):
        choices = dict(override.split("=") for override in overrides if "." not in override)
        return plan_job(_compose(*overrides, "paths.root=/tmp/fpx"), JobNaming(",".join(sorted(overrides)), None,
                                                                               choices))

    grid = [plan("retriever=bm25", f"embedder={embedder}", f"store={store}", "k=3")
            for embedder in ("minilm", "e5", "static") for store in ("numpy", "chroma")]
    assert {bm25.unused for bm25 in grid} == {("embedder", "store")}
    assert len({bm25.fingerprint("data") for bm25 in grid}) == 1
    assert {bm25.label for bm25 in grid} == {"k=3,retriever=bm25"}
    assert not any(key.split(".")[0] in ("embedder", "store") for key in grid[0].params)
    assert "embedder" not in grid[0].config and "store" not in grid[0].stages
    # a stage that takes the embedder keeps it: the semantic chunker, the extractive generator, a dense retriever
    assert plan("retriever=bm25", "chunker=semantic").unused == ("store",)
    assert plan("retriever=bm25", "generator=extractive").unused == ("store",)
    assert plan("retriever=bm25", "generator=extractive", "embedder=e5").fingerprint("data") != plan(
        "retriever=bm25", "generator=extractive").fingerprint("data")
    assert plan("retriever=hybrid").unused == () and plan("retriever=dense").unused == ()


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


def test_a_none_cutoff_augmenter_or_compressor_leaves_the_job_and_its_fingerprint_as_before_they_existed():
    plain = plan_job(_compose("cutoff=none", "augment=none", "compress=none"))
    assert not {"cutoff", "augment", "compress"} & {*plain.config, *plain.stages}
    assert plain.fingerprint("data") == FINGERPRINTS_BEFORE_THE_PLAN[()]
    widened = plan_job(_compose("cutoff=margin", "augment=neighbours", "compress=sentences"))
    assert widened.stages[widened.stages.index("reranker") + 1:][:3] == ("cutoff", "augment", "compress")
    assert widened.config.augment.chunks == 1 and widened.fingerprint("data") != plain.fingerprint("data")
    # the compressor embeds sentences with the job's embedder, so BM25 with one keeps an embedder
    assert plan_job(_compose("retriever=bm25", "compress=sentences")).unused == ("store",)


def test_a_whole_retriever_has_no_search_to_rewrite():
    with pytest.raises(ConfigError, match="query: a whole retriever retrieves for the question it is given"):
        plan_job(_whole("query=multi_query"))
    assert plan_job(_compose("query=hyde", "retriever=bm25")).stages[:3] == ("dataset", "chunker", "query")


def test_a_whole_retriever_is_widened_by_characters_not_by_the_chunks_it_has_none_of():
    with pytest.raises(ConfigError, match="augment.chunks: a whole retriever has no chunking"):
        plan_job(_whole("augment=neighbours"))
    assert "augment" in plan_job(_whole("augment=neighbours", "augment.chunks=0", "augment.characters=200")).stages
    assert "augment" in plan_job(_whole("augment=parent")).stages


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


# Computed by the runner before the plan existed (commit dface42, which built each pipeline and normalised the
# config inside `run`; those naming a model or file this machine lacks were built without preflight):
# MLflow stores and stage caches made then are matched by these, so a change here is a breaking change. One was
# made on purpose: the trained judges' (judge=trained, trained_mpnet, ensemble; relevance_judge=span_trained) moved
# when their `cache_dir` (where the model is kept, ${cache.dir}) left identity, so that they no longer differ from
# one project folder or clone to the next; a store made before matches none of their runs, which run again.
FINGERPRINTS_BEFORE_THE_PLAN = {
    (): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("cache=default",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("cache=off",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    # where runs go: not the identity
    ("tracking=mlflow",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("chunker=fixed",): "dc83611352b3e2cf7b6fad0c119d567edc94fc5b8cdc7528b5cac2fd1d09837d",
    ("chunker=recursive",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("chunker=semantic",): "5e4bf9651ba97a3674a35a28b110f591ec73d41e4ebcf407ffaaa700f9abe8f2",
    ("chunker=sentence",): "d2388b9809820e473d35e7eaea0a73f048234bee93067791fc5185e41544ebe6",
    ("dataset=beir", "dataset.path=/tmp/beir"):
        "e7b3e1367d99c51dba2e4a91731ad5b20c80be3c23769a0f48412beebc7b8726",
    ("dataset=chroma_general",): "94c46ddf0d2fe4024ac73efd3466831e6991142728aeae7e0dd8eef9223600a2",
    # a dataset that reads no files has no parser: the default's fingerprint
    ("parser=pypdf",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("dataset=files", "dataset.path=/tmp/files"):
        "209f837e5822aede816e36e1646141819391463314822fedfb7c46ab1dcd26c7",
    # auto reads PDFs with pdfium: the same configuration
    ("dataset=files", "dataset.path=/tmp/files", "parser=auto"):
        "209f837e5822aede816e36e1646141819391463314822fedfb7c46ab1dcd26c7",
    ("dataset=files", "dataset.path=/tmp/files", "parser=pdfium"):
        "209f837e5822aede816e36e1646141819391463314822fedfb7c46ab1dcd26c7",
    ("dataset=files", "dataset.path=/tmp/files", "parser=pypdf"):
        "63f153eafe09ddce0bda4e207fcf219275a01a9018d91cae8cdf017b63a7e49d",
    ("dataset=files", "dataset.path=/tmp/files", "parser=pdfminer"):
        "b0b6dc8292028be7f277bce097b29373357a0481e6b288a5a69db46857a7365d",
    ("dataset=native", "dataset.path=/tmp/native"):
        "2466cdfa87b3a120b3344d7cac7b3e8d7dc3f63358f5a7fe3cc090d599a31f05",
    ("dataset=sotu_qa",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("dataset=squad", "dataset.path=/tmp/squad.json"):
        "ebf339d93679050d98659e74ddad2fdb37eb72ab35f8a88bd504da740a0d6b8d",
    ("embedder=e5",): "669e080de5d2cbc0881d84f7cf2c91499c7d806d56a5921b38b027c4ddc6067d",
    ("embedder=minilm",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("embedder=minilm_int8",): "df12c7c320f484761a07a582fe7c026a95a9c955417c771a07a484d062f04723",
    ("embedder=sentence_transformers", "embedder.model=/models/all-mpnet-base-v2"):
        "52a59cdddc827618c7ec1551119b2c2424dabd68a1dddbd49d98f86be87d8ea3",
    ("embedder=static",): "bccacee820314ee91f8a3f803242c4a891b9b69ec3f08d0903c857c09b7b2c4d",
    ("generator=extractive", "judge=embedding"):
        "70666c6036d79bd19f8c334c8c65020abc5bd29a609cc0df0489701f59a60d42",
    ("generator=extractive", "judge=ensemble"):
        "61f60976710ec9b5b63af660345ca2c6fc2c2c64d18444535695db9ec549c860",
    ("generator=extractive", "judge=lexical"):
        "cb9b8d4b756c3845479b7dd5191bc2187f48dd600946741069f52f01f8e1daae",
    ("generator=extractive", "judge=likelihood"):
        "2525ee2075c76933b0fe027daf32859019574fb18c2e657d7e8355e0c29a817d",
    ("generator=extractive", "judge=llm"): "387a415212fda228f13b87876e0b7532bf35743c774ecc93f8c01920edbccfa0",
    ("generator=extractive", "judge=nli", "judge.model_path=/tmp"):
        "7d0b832fb0a276a3d25519472b7652f4508838f256a3b8d6a8ed6e4f0d3ddd5d",
    ("generator=extractive", "judge=none"):
        "11f95779809693fb22f474d4ddf24feee10d1903cb85c7c38349680519620c77",
    ("generator=extractive", "judge=trained"):
        "ce6ad55bea1fb3cdb0e234dceeb44ef874cd7d4faeb22612119b9bc3c8be8547",
    ("generator=extractive", "judge=trained_mpnet"):
        "b3b352f31bcedd9eedf5fd24472c264f775730f7f208863ca3370897b134aa1b",
    ("generator=llama_cpp", "judge=lexical"):
        "5b8c0ef5658799958c3b15c0a917c94e7db4e6923c80bab50ba4e6af2106659f",
    ("generator=transformers", "judge=lexical"):
        "9b5f32e8ceddd8053e7236b62d3b9c76167787e2e8ba3dac5393d4812ff0d649",
    ("generator=none", "judge=lexical"): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("generator=openai", "generator.model=m", "generator.base_url=http://127.0.0.1:9/v1"):
        "1d79440fe6df8be814b2e3c35d605f018df01dfc6844131b74d44dd130e61d2f",
    ("metrics=chroma_compat",): "696ee288c0b418225963e92ee919b02d0a0b7756033d2044e609d10bc2e41062",
    ("metrics=default",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("relevance_judge=embedding",): "72a182c8028b00b7366d9dca8b87d58b7afedf7605453c022940c6f57452a0eb",
    ("relevance_judge=lexical",): "be2cc9141fcf92626cb7df36ad260ffe0025dc52a23757161b431c60092c1d89",
    ("relevance_judge=llm",): "60fab78eb73c7734a0c560392cd4d4fc3a05e8df5dc36a9d434cdf0004d653e4",
    ("relevance_judge=none",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("relevance_judge=span_trained",): "329e767f11ddb2c1d9d93235884a3a88bdbb532481069c80ea26d76f54389356",
    ("reranker=cross_encoder", "reranker.model=/models/ms-marco-MiniLM-L-6-v2"):
        "74d76b19a5d9e74c7a66a9f721eac7ec9b3b6580e2f7508bfeebee48339366c4",
    ("reranker=embedding", "k=5", "depth=3"):
        "8a9bc3348e220d54a5efa1a82115fb3e31ddf0d656842890fdccd33e673fecbe",
    ("reranker=none",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("query=none",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",  # added later: as before
    # an LLM's JSON list: run by the llama_cpp tests (tests/runner/test_query.py), not tests/test_option_numbers.py
    ("query=multi_query",): "0fb093a28149a123b7a5efc4628708283106d5e124b5e5263735d2e4feaad8d1",
    ("query=decompose",): "8b3709f6b57d3ed6ecae0b67fe8744bddd396bcb97a7cea21e15b70803a3e613",
    ("cutoff=none",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("augment=none",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("compress=none",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    # without the embedder and store BM25 never took (was 1939f651…, one fingerprint per embedder and store)
    ("retriever=bm25",): "ddad823cca02bb78b3a6ad63eefa82d8b74ad3d15fb57506c38f309c34ee0315",
    ("retriever=dense",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("retriever=hybrid",): "9d0066e67481acc85616a02a4bc44b3890f632f26aa01218bce4d0c056845545",
    ("store=chroma",): "a8cdbbfda971d97e97fb82da27c57a8efba1095149bfec3d249f3f96ee509f2d",
    ("store=numpy",): "f8dbeca448ac60279a851343d79fef396d2a8f6f5c943e69937e407dc6b12458",
    ("store=qdrant",): "0e00f8e68ad61549e5d9448f1dcedb40707713cf5bdc6f30235418f9658d41b8",
}
# The same, with a whole retriever (`_whole`) in place of chunker, store and retriever.
WHOLE_RETRIEVER_FINGERPRINTS_BEFORE_THE_PLAN = {
    (): "01e4c32e712c3824fa76f29007b178235746dfee02b85170e1f879865d643e9e",  # without the embedder it never took

    ("generator=extractive", "judge=lexical"):
        "94cb863bc924cfbca7d40e30834aae18d50ac4257f65ebd7a552ea8d9c16441d",
}


@pytest.mark.parametrize("overrides", list(FINGERPRINTS_BEFORE_THE_PLAN))
def test_fingerprints_are_those_existing_stores_were_made_with(overrides):
    cfg = _compose(*overrides, "paths.root=/tmp/fpx")
    assert plan_job(cfg).fingerprint("data") == FINGERPRINTS_BEFORE_THE_PLAN[overrides]


@pytest.mark.parametrize("overrides", list(FINGERPRINTS_BEFORE_THE_PLAN))
def test_a_configuration_has_one_fingerprint_in_every_project_folder(overrides):
    """Two clones, or a team's folders sharing one server, find each other's runs of the same configuration."""
    here, there = (plan_job(_compose(*overrides, f"paths.root={root}")) for root in ("/tmp/fpx", "/srv/team/clone2"))
    assert here.fingerprint("data") == there.fingerprint("data")


@pytest.mark.parametrize("overrides", list(WHOLE_RETRIEVER_FINGERPRINTS_BEFORE_THE_PLAN))
def test_a_whole_retrievers_fingerprints_are_those_existing_stores_were_made_with(overrides):
    cfg = _whole(*overrides, "paths.root=/tmp/fpx")
    assert plan_job(cfg).fingerprint("data") == WHOLE_RETRIEVER_FINGERPRINTS_BEFORE_THE_PLAN[overrides]


def test_every_option_of_every_group_has_a_pinned_fingerprint():
    """Here, or (a new option that runs on the small dataset) beside its numbers in tests/option_numbers.json, which
    tests/test_option_numbers.py holds to its fingerprint."""
    pinned = {override.split(".")[0] for overrides in FINGERPRINTS_BEFORE_THE_PLAN for override in overrides}
    numbers = json.loads((CONF.parent / "tests" / "option_numbers.json").read_text())
    pinned |= {option for option, pins in numbers.items() if "fingerprint" in pins}
    options = [f"{group.name}={option.stem}" for group in CONF.iterdir()
               if group.is_dir() and group.name not in SKIPPED for option in group.glob("*.yaml")]
    missing = [option for option in options if option not in pinned]
    assert not missing, (f"pin these options' fingerprints, so a later change to them shows: {missing} "
                         "(RAGSWEEP_PIN_NUMBERS=write pytest tests/test_option_numbers.py, or here for an option "
                         "that cannot run there)")


def test_the_plan_says_which_metrics_the_job_logs():
    retrieval, whole = plan_job(_compose("paths.root=/tmp/fpx")), plan_job(_whole("paths.root=/tmp/fpx"))
    judged = plan_job(_compose("generator=extractive", "judge=lexical", "relevance_judge=lexical",
                               "paths.root=/tmp/fpx"))
    assert retrieval.logs("recall") and not whole.logs("recall") and whole.logs("token_iou")  # its chunking is unknown
    assert not retrieval.logs("answer_f1") and not retrieval.logs("generation_ms_p50")
    assert retrieval.logs("search_ms_p50")
    assert not retrieval.logs("context_relevance_judged") and judged.logs("context_relevance_judged")
    assert judged.logs("faithfulness") and judged.logs("generation_ms_p95") and not judged.logs("tokn_iou")


def test_a_runs_name_leaves_out_the_keys_identity_says():
    from ragsweep.identity import NOT_IN_NAMES

    packaged = OmegaConf.load(Path(__file__).resolve().parents[2] / "src" / "ragsweep" / "conf" / "ragsweep.yaml")
    assert tuple(packaged.hydra.job.config.override_dirname.exclude_keys) == NOT_IN_NAMES


def test_a_class_that_declares_a_version_puts_it_in_the_fingerprint_and_none_keeps_it_as_pinned(monkeypatch):
    import tests.own_components as own

    cfg = _compose("retriever=bm25", "paths.root=/tmp/fpx")
    cfg.retriever._target_ = "tests.own_components.VersionedBM25"
    unversioned = plan_job(cfg)
    monkeypatch.setattr(own.VersionedBM25, "version", "2")
    versioned = plan_job(cfg)
    assert unversioned.versions == {} and versioned.versions == {"retriever": "2"}
    assert versioned.fingerprint("data") != unversioned.fingerprint("data")
    assert versioned.unversioned_fingerprint("data") == unversioned.fingerprint("data")  # what finds older runs
    assert plan_job(_compose("retriever=bm25", "paths.root=/tmp/fpx")).versions == {}  # no class declares one yet
