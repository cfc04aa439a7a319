"""How a configuration is named and which group options it records, and that neither moves its fingerprint."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from ragsweep.identity import LABEL_KEY, config_fingerprint, config_label, group_choices

CONF = Path(__file__).resolve().parents[2] / "conf"

# what HydraConfig.get().runtime.choices holds in a job of `python sweep.py -m +sweep=quick` (trimmed)
HYDRA_CHOICES = {"sweep": "quick", "paths": "default", "dataset": "sotu_qa", "chunker": "fixed", "embedder": "minilm",
                 "store": "numpy", "retriever": "dense", "reranker": "none", "metrics": "default", "cache": "default",
                 "hydra/env": "default", "hydra/callbacks": None, "hydra/launcher": "basic", "hydra/sweeper": "basic"}


def test_group_choices_keep_the_stages_and_drop_hydra_and_sweep_mechanics():
    assert group_choices(HYDRA_CHOICES) == {"chunker": "fixed", "dataset": "sotu_qa", "embedder": "minilm",
                                            "metrics": "default", "reranker": "none", "retriever": "dense",
                                            "store": "numpy"}  # not paths, cache or sweep: they change no number
    assert group_choices({}) == {}


@pytest.mark.parametrize(("overrides", "config_name", "exported", "label"), [
    ("chunker=fixed,k=3", "config", None, "chunker=fixed,k=3"),
    ("", "config", None, "defaults"),
    ("", "best/quick", "chunker=recursive,k=3", "chunker=recursive,k=3"),  # the verify rerun, named like the winner
    ("", "best/old", None, "best/old"),  # an export written before exports carried a label
    ("k=5", "best/quick", "chunker=recursive,k=3", "k=5"),  # changed on the command line: not the winner any more
    ("dataset.path=/srv/team/2026/questions.json,dataset=squad,k=3", "config", None,
     "dataset.path=questions.json,dataset=squad,k=3"),  # a file by its name, not its folders
    ("dataset.path=a.json,k=3", "config", None, "dataset.path=a.json,k=3"),
])
def test_config_label(overrides, config_name, exported, label):
    assert config_label(overrides, config_name, exported) == label


def test_the_label_an_export_carries_leaves_the_fingerprint_alone():
    with initialize_config_dir(str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["chunker=fixed", "k=3"])
    resolved = OmegaConf.to_container(cfg, resolve=True)
    labelled = {**resolved, LABEL_KEY: "chunker=fixed,k=3"}
    assert config_fingerprint(labelled, "data") == config_fingerprint(resolved, "data")
    assert config_fingerprint({**resolved, "k": 4}, "data") != config_fingerprint(resolved, "data")  # it still sees k
