"""Hydra's private parts, each checked as ragsweep uses it (`ragsweep.hydra_internals`), so a Hydra upgrade
that changes one fails here, naming it, rather than somewhere in a sweep."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import hydra
import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from ragsweep import hydra_internals
from ragsweep.chunking.recursive import RecursiveChunker

ROOT = Path(__file__).resolve().parents[1]
CHANGED = f"Hydra {hydra.__version__} changed ragsweep.hydra_internals.{{}}: adapt it to this release"


def _parsed(*lines: str):
    return OverridesParser.create().parse_overrides(list(lines))


def test_only_hydra_internals_imports_hydras_private_modules():
    importing = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "src").rglob("*.py")
                       if re.search(r"^\s*(from|import) hydra\._internal", path.read_text(encoding="utf-8"), re.M))
    # the plugins subclass the basic launcher and sweeper from the module Hydra's plugin scan loads
    assert importing == ["src/hydra_plugins/ragsweep_grid/launcher.py", "src/hydra_plugins/ragsweep_grid/sweeper.py",
                         "src/ragsweep/hydra_internals.py"], importing


def test_locate_imports_a_target_and_raises_import_error_for_a_bad_one():
    assert hydra_internals.locate("ragsweep.chunking.recursive.RecursiveChunker") is RecursiveChunker, \
        CHANGED.format("locate")
    with pytest.raises(ImportError):
        hydra_internals.locate("ragsweep.chunking.nope.Nope")


def test_overrides_dirname_sorts_and_leaves_out_excluded_keys():
    name = hydra_internals.overrides_dirname(_parsed("k=3", "chunker=fixed", "paths.root=/x"), ["paths.root"])
    assert name == "chunker=fixed,k=3", CHANGED.format("overrides_dirname")


def test_apply_value_overrides_sets_adds_and_deletes():
    config = OmegaConf.create({"k": 1, "chunker": {"size": 100, "overlap": 0}})
    hydra_internals.apply_value_overrides(_parsed("k=3", "+depth=9", "~chunker.overlap"), config)
    assert OmegaConf.to_container(config) == {"k": 3, "chunker": {"size": 100}, "depth": 9}, \
        CHANGED.format("apply_value_overrides")


def test_sweep_points_expand_the_grid_of_a_command_line():
    points = hydra_internals.sweep_points(_parsed("k=1,2", "chunker=fixed,recursive", "depth=9"))
    assert sorted(map(sorted, points)) == sorted(
        sorted([f"k={k}", f"chunker={chunker}", "depth=9"]) for k in (1, 2) for chunker in ("fixed", "recursive")
    ), CHANGED.format("sweep_points")


def test_args_parser_reads_a_multirun_command_line():
    args = hydra_internals.args_parser().parse_args(["-m", "--config-name", "best/x", "k=1,2"])
    assert (args.multirun, args.config_name, args.overrides) == (True, "best/x", ["k=1,2"]), \
        CHANGED.format("args_parser")


def test_group_repository_tells_a_config_group_from_a_value():
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        config = compose("config", return_hydra_config=True)
        repository = hydra_internals.group_repository(GlobalHydra.instance().config_loader(), "config",
                                                       config.hydra.overrides.hydra)
    assert repository is not None and repository.group_exists("chunker") and not repository.group_exists("k"), \
        CHANGED.format("group_repository")
    assert hydra_internals.group_repository(object(), "config", []) is None


@pytest.mark.parametrize(("base", "methods"), [
    ("BasicLauncher", ["setup", "launch"]),
    ("BasicSweeper", ["setup", "sweep", "validate_batch_is_legal", "split_arguments"]),
])
def test_the_basic_launcher_and_sweeper_keep_what_ragsweeps_plugins_override(base, methods):
    """The one private import outside ragsweep.hydra_internals (see its docstring)."""
    from hydra._internal.core_plugins.basic_launcher import BasicLauncher
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    cls = {"BasicLauncher": BasicLauncher, "BasicSweeper": BasicSweeper}[base]
    missing = [name for name in methods if not inspect.isroutine(getattr(cls, name, None))]
    assert not missing, CHANGED.format(f"{base} ({', '.join(missing)})")
