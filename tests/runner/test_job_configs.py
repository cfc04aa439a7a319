"""ragsweep's launcher composes a sweep's job configs once per choice of config groups, equal to Hydra's."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import OmegaConf

from ragsweep.runner.entry import PROJECT_CONFIG
from ragsweep.runner.job_configs import GroupChoiceLoader

CONF = Path(__file__).resolve().parents[2] / "conf"
JOBS = [
    ["chunker=recursive", "k=1"],
    ["chunker=recursive", "k=3"],
    ["k=3", "chunker=fixed", "chunker.size=400"],
    ["chunker=fixed", "chunker.size=200", "k=3"],
    ["+sweep=quick", "k=2"],
    ["store=chroma", "~reranker", "k=1"],
    ["++extra=5", "k=1"],
    ["chunker={size:100}", "k=1"],  # a dict is a value, not a choice
    ["hydra.job.chdir=false", "k=2"],  # composed by Hydra alone
    ["chunker.sise=100"],  # refused, with Hydra's own error
    ["+k=4"],
]


def _composed(load, master, overrides):
    try:
        config = load(master, overrides)
    except Exception as error:  # noqa: BLE001  (the error itself is compared)
        return None, f"{type(error).__name__}: {error}"
    return OmegaConf.to_container(config), _flags(config)


def _flags(node, path: str = "") -> list[tuple[str, dict]]:
    """Every node's own flags (struct, readonly, ...), which `to_container` does not show."""
    flags = [(path, dict(node._metadata.flags))]
    if OmegaConf.is_config(node):
        for key in node if OmegaConf.is_dict(node) else range(len(node)):
            flags += _flags(node._get_node(key), f"{path}.{key}")
    return flags


@pytest.fixture(params=["checkout", "project"])
def project(request, tmp_path) -> tuple[Path, list[list[str]]]:
    """The checkout's conf/, or a project's from `ragsweep init` with an option of its own beside the packaged
    ones; and the jobs to compose there."""
    if request.param == "checkout":
        return CONF, JOBS
    (tmp_path / "conf" / "chunker").mkdir(parents=True)
    (tmp_path / "conf" / "config.yaml").write_text(PROJECT_CONFIG)
    (tmp_path / "conf" / "chunker" / "mine.yaml").write_text(
        "_target_: ragsweep.chunking.fixed.FixedTokenChunker\nsize: 120\noverlap: 0\n")
    return tmp_path / "conf", [*JOBS, ["chunker=mine", "k=2"], ["chunker=mine", "chunker.size=60"]]


def test_job_configs_equal_hydras_own_and_hydra_composes_once_per_choice(project, monkeypatch):
    conf_dir, jobs = project
    with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        master = loader.load_configuration("config", overrides=["k=1,3"], run_mode=RunMode.MULTIRUN)
        hydras_own = loader.load_sweep_config
        for job in jobs:
            job = [*job, "dataset=sotu_qa"]
            assert _composed(GroupChoiceLoader(loader).load_sweep_config, master, job) == _composed(
                hydras_own, master, job), job
        composed = []
        monkeypatch.setattr(loader, "load_sweep_config",
                            lambda *args: composed.append(args) or hydras_own(*args))
        choices = GroupChoiceLoader(loader)
        for k in range(5, 15):  # ten jobs of one choice of groups
            config = choices.load_sweep_config(master, ["chunker=recursive", f"k={k}", "dataset=sotu_qa"])
            assert config.k == k and list(config.hydra.overrides.task)[1] == f"k={k}"
            assert config.hydra.job.override_dirname == f"chunker=recursive,dataset=sotu_qa,k={k}"
    assert len(composed) == 1  # Hydra composed that choice of groups for the first job only


def test_a_sweep_uses_ragsweeps_launcher_and_sweeper_by_default():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        master = loader.load_configuration("config", [], run_mode=RunMode.MULTIRUN)
    assert master.hydra.runtime.choices["hydra/launcher"] == "ragsweep"
    assert master.hydra.launcher._target_ == "hydra_plugins.ragsweep_grid.launcher.RagsweepLauncher"
    assert master.hydra.sweeper._target_ == "hydra_plugins.ragsweep_grid.sweeper.RagsweepSweeper"
