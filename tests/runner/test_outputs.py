"""A job's config.yaml is the text `OmegaConf.to_yaml` writes, for every option of every config group."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from ragsweep.runner.outputs import config_yaml
from ragsweep.runner.plan import plan_job

CONF = Path(__file__).resolve().parents[2] / "conf"
GROUPS = sorted(path.name for path in CONF.iterdir() if path.is_dir() and not path.name.startswith("_"))


def test_every_option_of_every_group_is_written_as_omegaconf_writes_it():
    options = [(group, path.stem) for group in GROUPS if group not in ("sweep", "paths")
               for path in sorted((CONF / group).glob("*.yaml"))]
    assert len(options) > 30  # the conf/ tree was found
    written = 0
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for group, option in options:
            overrides = [f"{group}={option}"] if group != "dataset" else [f"dataset={option}", "paths.data=/data"]
            try:
                plan = plan_job(compose("config", overrides=["dataset=sotu_qa", *overrides]))
            except Exception:  # noqa: BLE001  (an option that needs others to plan; the rest cover its keys)
                continue
            assert config_yaml(plan.resolved) == OmegaConf.to_yaml(plan.config, resolve=True), f"{group}={option}"
            written += 1
    assert written > 30


@pytest.mark.parametrize("value", ["1", "1.5", "1e3", "true", "no", "null", "~", "", " padded ", "a: b", "- x",
                                   "#", "'quoted'", '"double"', "line\nbreak", "ünïcödé", "x" * 200,
                                   "${not.resolved}", 3, 2.5, True, None, [1, "2", [3]], {"nested": {"k": "v"}}])
def test_values_yaml_would_misread_are_written_as_omegaconf_writes_them(value):
    tree = {"key": value, "list": [value], "other": {"deep": value}}
    assert config_yaml(tree) == OmegaConf.to_yaml(OmegaConf.create(tree))
