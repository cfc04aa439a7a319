"""Every attribute the engine reads on a component is declared by its stage (the protocol, or the `OPTIONAL`
table beside it), and every YAML option's class gives the declared ones it has their declared kind."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from hydra.utils import instantiate

from ragsweep.augment import base as augment
from ragsweep.chunking import base as chunking
from ragsweep.compress import base as compress
from ragsweep.cutoff import base as cutoff
from ragsweep.embedding import base as embedding
from ragsweep.generation import base as generation
from ragsweep.hydra_internals import locate
from ragsweep.judging import base as judging
from ragsweep.parsing import base as parsing
from ragsweep.query import base as query
from ragsweep.rerank import base as rerank
from ragsweep.retrieval import base as retrieval
from ragsweep.tracking.base import RunStore, Tracker
from tests.conf_options import compose_option, options

SRC = Path(__file__).resolve().parents[1] / "src" / "ragsweep"
STAGES = {  # config group: (the stage's protocol, its table of optional attributes)
    "parser": (parsing.FileParser, parsing.OPTIONAL),
    "chunker": (chunking.Chunker, chunking.OPTIONAL),
    "embedder": (embedding.Embedder, embedding.OPTIONAL),
    "retriever": (retrieval.Retriever, retrieval.OPTIONAL),
    "query": (query.QueryRewriter, query.OPTIONAL),
    "reranker": (rerank.Reranker, rerank.OPTIONAL),
    "cutoff": (cutoff.Cutoff, cutoff.OPTIONAL),
    "augment": (augment.Augmenter, augment.OPTIONAL),
    "compress": (compress.Compressor, compress.OPTIONAL),
    "generator": (generation.Generator, generation.OPTIONAL),
    "judge": (judging.Judge, judging.OPTIONAL),
    "relevance_judge": (judging.Judge, judging.OPTIONAL),
}
# Where the engine and the commands read components' attributes by name.
READERS = [*sorted((SRC / "runner").rglob("*.py")), SRC / "embedding" / "cached.py",
           SRC / "judging" / "calibration" / "calibrate.py", SRC / "cli" / "judges.py"]
# Names read that are not a component's: a YAML error's position (runner.errors, runner.compose), a database
# error's cause (runner.failures), a loaded dataset's questions (runner.build), PyYAML's C dumper
# (runner.outputs), an Optuna direction's name (runner.preflight).
# read on YAML errors, datasets, Hydra's launchers (hydra_context): not on a stage's component
NOT_COMPONENTS = {"problem_mark", "problem", "orig", "queries", "CDumper", "name", "hydra_context"}
TRACKER_READ = re.compile(r"\btracker\.(\w+)")
READ = re.compile(r"\b(?:getattr|hasattr)\(\s*[\w.]+\s*,\s*\"(\w+)\"")


def _members(protocol: type) -> set[str]:
    """The names a protocol declares, its base protocols' included."""
    layers = [cls for cls in protocol.__mro__ if cls.__module__.startswith("ragsweep")]
    return {name for cls in layers for name in {*vars(cls), *getattr(cls, "__annotations__", {})}
            if not name.startswith("_")}


def test_every_attribute_the_engine_reads_on_a_component_is_declared_by_a_stage():
    declared = {name for protocol, table in STAGES.values() for name in (*_members(protocol), *table)}
    read = {(path.name, name) for path in READERS for name in READ.findall(path.read_text())}
    assert {name for _, name in read} >= {"cached", "model_key", "prepare", "preload"}  # the scan sees them
    undeclared = sorted((file, name) for file, name in read if name not in declared | NOT_COMPONENTS)
    assert not undeclared, f"declare these in the stage's OPTIONAL table (ragsweep.contract): {undeclared}"


@pytest.mark.parametrize("group, option", [(group, option) for group in STAGES for option in options(group)])
def test_each_options_class_gives_the_optional_attributes_it_has_their_declared_kind(group, option):
    target = compose_option(group, option)[group]._target_
    component = locate(target)
    _, table = STAGES[group]
    for name, attribute in table.items():
        try:
            value = inspect.getattr_static(component, name)
        except AttributeError:
            continue
        if isinstance(value, (property, staticmethod, classmethod)) or hasattr(value, "__set_name__"):
            continue  # an instance's value: the stage's contract test builds the option
        assert attribute.accepts(value), f"{target}.{name} must be a {attribute.kind}: {attribute.meaning}"


@pytest.mark.parametrize("option", options("tracking"))
def test_each_tracking_option_is_a_tracker_and_a_run_store(option, tmp_path):
    config = compose_option("tracking", option, f"paths.root={tmp_path}")
    tracker = instantiate(config.tracking)
    assert isinstance(tracker, Tracker), f"conf/tracking/{option}.yaml must build a Tracker"
    assert isinstance(tracker, RunStore), f"conf/tracking/{option}.yaml must build a RunStore (for the commands)"


def test_the_engine_reads_only_what_the_tracker_protocol_names():
    read = {(path.name, name) for path in sorted((SRC / "runner").rglob("*.py"))
            for name in TRACKER_READ.findall(path.read_text())}
    assert {name for _, name in read} >= {"start_run", "finished_run", "race_run"}  # the scan sees them
    undeclared = sorted((file, name) for file, name in read if name not in _members(Tracker))
    assert not undeclared, f"name these in ragsweep.tracking.base.Tracker: {undeclared}"


# What reads runs back or annotates them (a sweep's parent run, races, the commands, the Python API), apart from
# labels drawn onto MLflow's traces (tracking/label_draws.py, tracking/feedback_labels.py: MLflow's own features).
RUN_READERS = [*(SRC / "results").rglob("*.py"), *(SRC / "cli").rglob("*.py"), *(SRC / "api").rglob("*.py"),
               *(SRC / "tracking" / name for name in ("runs.py", "sweep.py", "racing.py", "callbacks.py",
                                                       "calibration.py", "judges.py", "options.py"))]


def test_what_reads_runs_back_reads_only_what_the_run_store_protocol_names():
    read = {(path.name, name) for path in sorted(RUN_READERS) for name in TRACKER_READ.findall(path.read_text())}
    assert {name for _, name in read} >= {"runs", "run", "download", "set_tags", "attach"}  # the scan sees them
    undeclared = sorted((file, name) for file, name in read if name not in _members(RunStore))
    assert not undeclared, f"name these in ragsweep.tracking.base.RunStore: {undeclared}"
