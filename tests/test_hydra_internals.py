"""Hydra's private parts, each checked as ragsweep uses it (`ragsweep.hydra_internals`), so a Hydra upgrade
that changes one fails here, naming it, rather than somewhere in a sweep."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import os
from pathlib import Path

import hydra
import pytest
from hydra import compose, initialize_config_dir
from hydra._internal import utils as hydra_utils
from hydra.core.config_loader import ConfigLoader
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import HydraException
from hydra.types import HydraContext
from omegaconf import OmegaConf

from ragsweep import hydra_internals
from ragsweep.chunking.recursive import RecursiveChunker

ROOT = Path(__file__).resolve().parents[1]
CHANGED = f"Hydra {hydra.__version__} changed ragsweep.hydra_internals.{{}}: adapt it to this release"

# hydra.core's documented plugin and app API (Hydra's docs and its example plugins), which any module may import
PUBLIC = {"hydra.core.config_store.ConfigStore", "hydra.core.hydra_config.HydraConfig", "hydra.core.plugins.Plugins",
          "hydra.core.utils.configure_log", "hydra.core.utils.JobStatus", "hydra.core.config_loader.ConfigLoader"}
# The classes ragsweep's default plugins extend, imported from the modules Hydra's plugin scan loads (see
# ragsweep.hydra_internals), and what the plugins take from each: methods, or a config's fields.
PLUGIN_BASES = {
    "src/hydra_plugins/ragsweep_grid/launcher.py": {
        "hydra._internal.core_plugins.basic_launcher.BasicLauncher": ["setup", "launch"]},
    "src/hydra_plugins/ragsweep_grid/sweeper.py": {
        "hydra._internal.core_plugins.basic_sweeper.BasicSweeper": ["setup", "sweep", "get_job_batch",
                                                                    "validate_batch_is_legal", "split_arguments"],
        "hydra._internal.core_plugins.basic_sweeper.BasicSweeperConf": ["max_batch_size", "params"]},
}
# runner/workers.py parses overrides with Hydra's OverridesParser until it calls hydra_internals.parse_overrides
PENDING: set[tuple[str, str]] = set()


def _parsed(*lines: str):
    return hydra_internals.parse_overrides(lines)


def _private_imports(path: Path) -> set[str]:
    """What a module imports from `hydra._internal` or `hydra.core`, lazy imports too, less the public API."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return {name for name in names if name.startswith(("hydra._internal.", "hydra.core.")) and name not in PUBLIC}


def test_only_hydra_internals_imports_hydras_private_modules():
    found = {(path.relative_to(ROOT).as_posix(), name) for path in (ROOT / "src").rglob("*.py")
             if path.name != "hydra_internals.py" for name in _private_imports(path)}
    bases = {(path, name) for path, classes in PLUGIN_BASES.items() for name in classes}
    unexpected = sorted(found - PENDING - bases)
    assert not unexpected, f"put these behind ragsweep.hydra_internals, with a test here: {unexpected}"
    assert bases <= found, f"PLUGIN_BASES names an import the plugins no longer make: {sorted(bases - found)}"


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


def test_parse_overrides_reads_keys_lines_and_the_type_of_each_sweep():
    choice, interval, span, chosen, hydra_line, node, removed, added = _parsed(
        "k=1,2", "x=interval(1,2.5)", "y=range(1,4)", "z=choice(a,b)", "hydra.job.env_set.A=1", "chunker={size:9}",
        "~q", "+w=3")
    read = {
        "input_line": choice.input_line, "key_or_group": [o.key_or_group for o in (choice, removed, added)],
        "get_key_element": [o.get_key_element() for o in (choice, removed, added)],
        "get_value_element_as_str": added.get_value_element_as_str(),
        "is_sweep_override": [o.is_sweep_override() for o in (choice, interval, span, chosen, added)],
        "is_hydra_override": [hydra_line.is_hydra_override(), choice.is_hydra_override()],
        "sweep_string_iterator": [list(o.sweep_string_iterator()) for o in (choice, span, chosen)],
        "ChoiceSweep": [isinstance(o.value(), hydra_internals.ChoiceSweep) for o in (choice, chosen)],
        "IntervalSweep": isinstance(interval.value(), hydra_internals.IntervalSweep)
        and (interval.value().start, interval.value().end) == (1, 2.5),
        "RangeSweep": isinstance(span.value(), hydra_internals.RangeSweep), "value": node.value(),
    }
    expected = {
        "input_line": "k=1,2", "key_or_group": ["k", "q", "w"], "get_key_element": ["k", "~q", "+w"],
        "get_value_element_as_str": "3", "is_sweep_override": [True, True, True, True, False],
        "is_hydra_override": [True, False], "sweep_string_iterator": [["1", "2"], ["1", "2", "3"], ["a", "b"]],
        "ChoiceSweep": [True, True], "IntervalSweep": True, "RangeSweep": True, "value": {"size": 9},
    }
    changed = [name for name in expected if read[name] != expected[name]]
    assert not changed, CHANGED.format(f"parse_overrides (Override: {', '.join(changed)})")
    with pytest.raises(HydraException):
        _parsed("k=[1,")


def test_active_config_loader_composes_a_job_as_a_launcher_does():
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        primary = compose("config", return_hydra_config=True)
        loader = hydra_internals.active_config_loader()
        parsed = hydra_internals.parse_overrides(["k=3"], loader)
        job = loader.load_sweep_config(primary, [parsed[0].input_line])
    assert isinstance(loader, ConfigLoader) and job.k == 3, CHANGED.format("active_config_loader")


@pytest.mark.parametrize("launcher", ["hydra._internal.core_plugins.basic_launcher.BasicLauncher",
                                      "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"])
def test_launcher_config_loader_is_the_loader_a_launcher_was_set_up_with(launcher):
    module, _, name = launcher.rpartition(".")
    launched = getattr(pytest.importorskip(module), name)()
    loader = object()
    launched.setup(hydra_context=HydraContext(config_loader=loader, callbacks=None), task_function=lambda cfg: None,
                   config=OmegaConf.create())
    assert hydra_internals.launcher_config_loader(launched) is loader, \
        CHANGED.format(f"launcher_config_loader ({name})")
    assert hydra_internals.launcher_config_loader(object()) is None


def test_env_override_sets_a_jobs_variables_and_restores_them(monkeypatch):
    monkeypatch.setenv("RAGSWEEP_TEST_KEPT", "before")
    monkeypatch.delenv("RAGSWEEP_TEST_NEW", raising=False)
    env_set = OmegaConf.create({"RAGSWEEP_TEST_KEPT": "during", "RAGSWEEP_TEST_NEW": "1"})  # as hydra.job.env_set
    with hydra_internals.env_override(env_set):
        inside = os.environ.get("RAGSWEEP_TEST_KEPT"), os.environ.get("RAGSWEEP_TEST_NEW")
    after = os.environ.get("RAGSWEEP_TEST_KEPT"), os.environ.get("RAGSWEEP_TEST_NEW")
    assert (inside, after) == (("during", "1"), ("before", None)), CHANGED.format("env_override")


@pytest.mark.parametrize(("base", "members"), [(base, members) for classes in PLUGIN_BASES.values()
                                               for base, members in classes.items()])
def test_the_basic_launcher_and_sweeper_keep_what_ragsweeps_plugins_take(base, members):
    """The one private import outside ragsweep.hydra_internals (see its docstring)."""
    module, _, name = base.rpartition(".")
    cls = getattr(importlib.import_module(module), name, None)
    if dataclasses.is_dataclass(cls):
        missing = sorted(set(members) - {field.name for field in dataclasses.fields(cls)})
    else:
        missing = [member for member in members if not inspect.isroutine(getattr(cls, member, None))]
    assert cls is not None and not missing, CHANGED.format(f"{name} ({', '.join(missing) or 'gone'})")


def test_the_basic_sweeper_is_built_from_its_config_and_keeps_what_setup_gives_it():
    """RagsweepSweeper passes its config's fields to BasicSweeper and reads what its setup keeps."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    sweeper = BasicSweeper(max_batch_size=None, params={"k": "1,2"})
    config = OmegaConf.create({"hydra": {"launcher": {
        "_target_": "hydra._internal.core_plugins.basic_launcher.BasicLauncher"}}})
    context = HydraContext(config_loader=object(), callbacks=None)
    sweeper.setup(hydra_context=context, task_function=lambda cfg: None, config=config)
    kept = (sweeper.config is config, sweeper.hydra_context is context, type(sweeper.launcher).__name__)
    assert kept == (True, True, "BasicLauncher"), \
        CHANGED.format("BasicSweeper (setup: config, hydra_context, launcher)")


def test_reported_first_sees_an_error_hydra_would_report_and_writing_folder_names_the_folder_hydra_was_making(
        tmp_path, monkeypatch):
    """A run folder under a file: Hydra's run_job raises before the task starts, and `run_and_report` would print
    it as a traceback; the handler sees it first, with the folder and its setting, and may end the process."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    seen = []

    def handle(error: Exception) -> None:
        seen.append(hydra_internals.writing_folder(error))
        raise SystemExit(7)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", ["app", f"hydra.run.dir={blocker}/run"])
    reported = hydra_utils.run_and_report
    try:
        with pytest.raises(SystemExit) as exited, hydra_internals.reported_first(handle):
            hydra.main(version_base="1.3", config_path=None)(lambda cfg: None)()
    finally:
        GlobalHydra.instance().clear()
    assert exited.value.code == 7 and seen == [("hydra.run.dir", blocker / "run")], CHANGED.format("reported_first")
    assert hydra_utils.run_and_report is reported
    assert hydra_internals.writing_folder(RuntimeError("raised elsewhere")) is None
