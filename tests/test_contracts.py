"""Every attribute read of a config group's component outside it is declared by that group (its protocol, or the
`OPTIONAL` table beside it), and every YAML option's class gives its group's protocol and the declared attributes
it has their declared kind."""

from __future__ import annotations

import ast
import functools
import inspect
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from hydra.utils import instantiate

from ragsweep.augment import base as augment
from ragsweep.chunking import base as chunking
from ragsweep.compress import base as compress
from ragsweep.cutoff import base as cutoff
from ragsweep.data import base as data
from ragsweep.embedding import base as embedding
from ragsweep.generation import base as generation
from ragsweep.hydra_internals import locate
from ragsweep.judging import base as judging
from ragsweep.metrics import base as metrics
from ragsweep.parsing import base as parsing
from ragsweep.query import base as query
from ragsweep.rerank import base as rerank
from ragsweep.retrieval import base as retrieval
from ragsweep.stores import base as stores
from ragsweep.tracking.base import RunStore, Tracker
from tests.conf_options import compose_option, options

SRC = Path(__file__).resolve().parents[1] / "src" / "ragsweep"
GROUPS = {  # config group: (its protocol, its table of optional attributes)
    "parser": (parsing.FileParser, parsing.OPTIONAL),
    "dataset": (data.DatasetLoader, data.OPTIONAL),
    "chunker": (chunking.Chunker, chunking.OPTIONAL),
    "embedder": (embedding.Embedder, embedding.OPTIONAL),
    "store": (stores.VectorStore, stores.OPTIONAL),
    "retriever": (retrieval.Retriever, retrieval.OPTIONAL),
    "query": (query.QueryRewriter, query.OPTIONAL),
    "reranker": (rerank.Reranker, rerank.OPTIONAL),
    "cutoff": (cutoff.Cutoff, cutoff.OPTIONAL),
    "augment": (augment.Augmenter, augment.OPTIONAL),
    "compress": (compress.Compressor, compress.OPTIONAL),
    "generator": (generation.Generator, generation.OPTIONAL),
    "judge": (judging.Judge, judging.OPTIONAL),
    "relevance_judge": (judging.Judge, judging.OPTIONAL),
    "metrics": (metrics.Evaluator, metrics.OPTIONAL),
}  # the tracking group's protocols have tests of their own, at the end
EVERY = tuple(GROUPS)
PREFLIGHTED = ("chunker", "query", "retriever", "reranker", "embedder", "generator", "judge", "relevance_judge")
DISABLED = ("query", "cutoff", "augment", "compress", "generator", "judge", "relevance_judge")  # those with `none`
ASKING = ("query", "judge", "relevance_judge")  # those whose `generator` prices their calls (ASKS)

# A component is known by the name it is read through, once a built stage's `.component` is taken off:
# `pipeline.judge.component`, `self.store`, `retriever`, `stages["embedder"]`.
NAMES = {"parser": "parser", "loader": "dataset", "chunker": "chunker", "embedder": "embedder",
         "answer_embedder": "embedder", "rescoring_embedder": "embedder", "store": "store", "retriever": "retriever",
         "reranker": "reranker", "cutoff": "cutoff", "augmenter": "augment", "compressor": "compress",
         "generator": "generator", "judge": "judge", "relevance_judge": "relevance_judge", "evaluator": "metrics"}
WHOLE = {"pipeline.query": "query", "pipeline.dataset": "dataset"}  # bare, `query` and `dataset` are records
CONFIGS = {"cfg", "config", "args"}  # what is read under a config node or a command's arguments is no component
BUILT = {"component", "signature"}  # a built stage's own fields (`runner.build.Built`), not its component's;
# and Python's own attributes (`__module__`, `__dict__`) are read on any object
# Receivers that name no group, or name one otherwise, module by module; "x in f" is `x` within function `f`.
# An empty tuple: not a component (an error, a record, argparse, Hydra's loader, a class read by its own module).
RECEIVERS: dict[str, dict[str, tuple[str, ...]]] = {
    "api/choices.py": {"value": ()},  # a caller's own object, before the wrapper class its group names (own.py)
    "cli/__init__.py": {"parser": ()},
    "cli/gate.py": {"parser": ()},
    "hydra_internals.py": {"loader": ()},
    "identity.py": {"component": EVERY},  # the class of every `_target_` (its version)
    "judging/ensemble.py": {"member": ("judge",), "judge": ()},
    "judging/llm.py": {"longer": ("generator",)},
    "judging/trained.py": {"judge": (), "source": (), "loaded(corpus)": ()},
    "judging/training/alignment.py": {"judge": ()},
    "memo.py": {"store": ()},
    "results/best.py": {"judge": ()},
    "retrieval/hybrid.py": {"side": ("retriever",)},
    "runner/build.py": {"component in _preflight": PREFLIGHTED, "inner": ("embedder",), "dataset": ()},
    "runner/compose.py": {"error": ()},
    "runner/costing.py": {"component": ASKING, "model": ("generator",),  # a generator's own read the same way
                          "searcher": ("embedder", "reranker")},
    "runner/estimating/endpoints.py": {"cached": ("embedder",)},
    "runner/distinct.py": {"loader": ()},
    "runner/embedding_helpers.py": {"side": ("retriever",)},
    "runner/errors.py": {"error": ()},
    "runner/estimating/job_calls.py": {"built.component in _model": ASKING,  # as costing.py
                                       "asked in _model": ("generator",)},
    "runner/generate.py": {"component": ("generator", "embedder", "judge")},
    "runner/outputs.py": {"yaml": ()},
    "runner/preflight.py": {"d": ()},  # an Optuna direction
    "runner/targets.py": {"component in enabled": DISABLED, "component in whole_retriever": ("retriever",),
                          "component in reranker_candidates": ("reranker",)},
    "runner/workers.py": {"component": EVERY},  # every option's class preloads (a tracking class's too: no table)
    "tracking/judges.py": {"judge": ()},
}
# Modules whose every `getattr`/`hasattr` receiver must be known (a group's component, or none): the engine, the
# API, the commands, `calibrate`, what reads every class's version or a loader's files, and every module with a
# class built from another component (`_holds`). Elsewhere only reads through a component's known name count.
ENGINE = ("runner/", "api/", "cli/", "judging/calibration/", "identity.py", "data/loading.py")
TRACKER_READ = re.compile(r"\btracker\.(\w+)")


class Read(NamedTuple):
    """An attribute read of a component: where, on what, which name, the groups that component may be of."""

    module: str
    line: int
    receiver: str
    name: str
    groups: tuple[str, ...] | None  # None: a receiver nobody said what it is


def _members(protocol: type) -> set[str]:
    """The names a protocol declares, its base protocols' included."""
    layers = [cls for cls in protocol.__mro__ if cls.__module__.startswith("ragsweep")]
    return {name for cls in layers for name in {*vars(cls), *getattr(cls, "__annotations__", {})}
            if not name.startswith("_")}


def _declared(group: str) -> set[str]:
    protocol, table = GROUPS[group]
    return {*_members(protocol), *table}


def _groups(receiver: ast.expr, module: str, function: str | None) -> tuple[str, ...] | None:
    """The groups whose component `receiver` is: `RECEIVERS`, else its name (`NAMES`); () none, None unknown."""
    text = ast.unparse(receiver)
    known = RECEIVERS.get(module, {})
    if function is not None and f"{text} in {function}" in known:
        return known[f"{text} in {function}"]
    if text in known:
        return known[text]
    while isinstance(receiver, ast.Attribute) and receiver.attr == "component":
        receiver = receiver.value
    text, root = ast.unparse(receiver), receiver
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    if isinstance(root, ast.Name) and root.id in CONFIGS:
        return ()
    if text in WHOLE:
        return (WHOLE[text],)
    if isinstance(receiver, ast.Subscript) and isinstance(receiver.slice, ast.Constant):
        name = receiver.slice.value
    else:
        name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", None)
    return (NAMES[name],) if name in NAMES else None


def _holds(tree: ast.Module) -> bool:
    """Whether a class of the module is built from another component (a constructor argument named as one)."""
    return any(isinstance(node, ast.FunctionDef) and node.name == "__init__"
               and {arg.arg for arg in node.args.args + node.args.kwonlyargs} & {*NAMES, "members"}
               for node in ast.walk(tree))


def _reads_of(source: str, module: str) -> Iterator[Read]:
    """Reads of components in one module's source: `getattr`/`hasattr` with a literal name, and `x.name` where `x`
    is a component. In an engine module, or one holding components, a by-name read on an unknown receiver is one
    too, with no groups, so the test asks what it is."""
    tree = ast.parse(source)
    strict = module.startswith(ENGINE) or _holds(tree)

    def visit(node: ast.AST, function: str | None) -> Iterator[Read]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)):
            groups = _groups(node.args[0], module, function)
            if groups or groups is None and strict:
                yield Read(module, node.lineno, ast.unparse(node.args[0]), node.args[1].value, groups)
        elif isinstance(node, ast.Attribute) and node.attr not in BUILT and not node.attr.startswith("__"):
            groups = _groups(node.value, module, function)
            if groups:
                yield Read(module, node.lineno, ast.unparse(node.value), node.attr, groups)
        for child in ast.iter_child_nodes(node):
            yield from visit(child, function)

    yield from visit(tree, None)


def _reads() -> list[Read]:
    return [read for path in sorted(SRC.rglob("*.py"))
            for read in _reads_of(path.read_text(), path.relative_to(SRC).as_posix())]


def _undeclared(reads: list[Read]) -> list[str]:
    """Each read whose receiver nobody named, or whose name one of its groups does not declare."""
    wrong = [f"{read.module}:{read.line}: what is `{read.receiver}`? say in RECEIVERS" for read in reads
             if read.groups is None]
    return wrong + [f"{read.module}:{read.line}: {read.receiver}.{read.name} is not declared for {group}"
                    for read in reads for group in read.groups or () if read.name not in _declared(group)]


def test_every_attribute_read_of_a_groups_component_is_declared_by_that_group():
    reads = _reads()
    seen = {(group, read.name) for read in reads for group in read.groups or ()}
    assert seen >= {("store", "close"), ("store", "search_breadth"), ("retriever", "prepare"), ("judge", "cached"),
                    ("judge", "model_key"), ("dataset", "path"), ("metrics", "score"), ("embedder", "fill"),
                    ("judge", "preflight"), ("augment", "preload")}  # the scan sees them
    assert {read.module for read in reads} >= {"retrieval/dense.py", "judging/ensemble.py", "rerank/embedding.py",
                                               "compress/sentences.py", "cli/judges.py", "api/loaded.py"}
    undeclared = _undeclared(reads)
    assert not undeclared, "declare these in the group's protocol or OPTIONAL table (ragsweep.contract):\n" + \
        "\n".join(undeclared)


@pytest.mark.parametrize("source, wanted", [
    ("def f(self):\n    return getattr(self.store, 'cached', True)\n", "self.store.cached is not declared for store"),
    ("def f(pipeline):\n    return pipeline.evaluator.threshold\n", "evaluator.threshold is not declared for metrics"),
    ("def f(thing):\n    return hasattr(thing, 'preflight')\n", "what is `thing`?"),
], ids=["another group's name", "a direct read", "an unknown receiver"])
def test_the_check_fails_on_a_read_its_group_does_not_declare(source, wanted):
    """A judge's `cached` read on a store, a name read on the evaluator, a read on a receiver nobody named: each a
    read the check must refuse, even when another group declares the name."""
    assert any(wanted in line for line in _undeclared(list(_reads_of(source, "runner/new.py"))))


@functools.cache
def _set_on_self(cls: type) -> frozenset[str]:
    """What a class's own code assigns to `self.<name>` (an instance's attributes, unseen on the class)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return frozenset()
    return frozenset(node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                     and isinstance(node.ctx, ast.Store) and ast.unparse(node.value) == "self")


def _lacks(component: type, protocol: type) -> list[str]:
    """The protocol's names a class does not give: a method not callable on it, an attribute neither on it (or
    annotated) nor set on `self` by its code."""
    lacking = []
    for name in sorted(_members(protocol)):
        if any(name in _set_on_self(cls) for cls in component.__mro__[:-1]):
            continue
        try:
            value = inspect.getattr_static(component, name)
        except AttributeError:
            if not any(name in getattr(cls, "__annotations__", {}) for cls in component.__mro__):
                lacking.append(name)
            continue
        if inspect.isfunction(inspect.getattr_static(protocol, name, None)) and not callable(value):
            lacking.append(name)
    return lacking


class _NoVerdicts:
    judge = None

    def __init__(self) -> None:
        self.threshold = 0.5


def test_the_option_check_fails_on_a_class_lacking_its_protocol():
    assert _lacks(_NoVerdicts, judging.Judge) == ["judge"]
    assert _lacks(_NoVerdicts, stores.VectorStore) == ["add", "search"]


@pytest.mark.parametrize("group, option", [(group, option) for group in GROUPS for option in options(group)])
def test_each_options_class_gives_its_groups_protocol_and_optional_attributes_their_kind(group, option):
    target = compose_option(group, option)[group]._target_
    component = locate(target)
    protocol, table = GROUPS[group]
    assert not _lacks(component, protocol), f"{target} lacks {_lacks(component, protocol)} of {protocol.__name__}"
    for name, attribute in table.items():
        try:
            value = inspect.getattr_static(component, name)
        except AttributeError:
            continue
        if isinstance(value, (property, staticmethod, classmethod)) or hasattr(value, "__set_name__"):
            continue  # an instance's value: the stage's contract test builds the option
        assert attribute.accepts(value), f"{target}.{name} must be a {attribute.kind}: {attribute.meaning}"


def test_every_group_with_options_is_checked():
    """A new config group of components is added to GROUPS, so its options and reads are checked."""
    built = {path.parent.name for path in (SRC / "conf").glob("*/*.yaml") if "_target_:" in path.read_text()}
    assert built - {"tracking"} == set(GROUPS)


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
# labels drawn onto MLflow's traces (tracking/label_draws.py, tracking/feedback_labels.py: MLflow's own features,
# which the commands reach through `RunStore.place_draw` and `RunStore.human_labels`).
RUN_READERS = [*(SRC / "results").rglob("*.py"), *(SRC / "cli").rglob("*.py"), *(SRC / "api").rglob("*.py"),
               *(SRC / "tracking" / name for name in ("runs.py", "sweep.py", "racing.py", "callbacks.py",
                                                       "calibration.py", "judges.py", "options.py", "judged_runs.py"))]


def test_what_reads_runs_back_reads_only_what_the_run_store_protocol_names():
    read = {(path.name, name) for path in sorted(RUN_READERS) for name in TRACKER_READ.findall(path.read_text())}
    assert {name for _, name in read} >= {"runs", "run", "download", "set_tags", "attach"}  # the scan sees them
    undeclared = sorted((file, name) for file, name in read if name not in _members(RunStore))
    assert not undeclared, f"name these in ragsweep.tracking.base.RunStore: {undeclared}"


# MLflow's own names, which only tracking/ uses: its runs table's columns (`params.k`, f"metrics.{name}", the prefix
# "tags."), its tags (`mlflow.runName`, `mlflow.parentRunId`, ...), a SQLite store's URI built or taken apart, its
# search. Elsewhere runs are `TrackedRun`s, and tables of them have `tracking.table`'s columns.
MLFLOW_NAMES = re.compile(r"""["'](?:params|metrics|tags)\.(?!json["'])[\w.`]*["']"""  # a column, or its prefix
                          r"""|\bf["'](?:params|metrics|tags)\."""  # a column built: f"metrics.{name}"
                          r"""|\bmlflow\.(?:[a-z]+[A-Z]\w*|user|source|note)\b"""  # MLflow's tags: mlflow.runName
                          r"""|sqlite:///\{|(?:startswith|removeprefix)\(\s*["']sqlite:///"""  # a URI built, parsed
                          r"""|\bsearch_runs\b""")
OUTSIDE_TRACKING = sorted({*(path for path in RUN_READERS if path.parent.name != "tracking"),
                           *(SRC / "runner").rglob("*.py")})


# MLflow's own features (traces, the labels people give on them): reached through `RunStore`, never imported outside
# tracking/, so a store without them says so rather than fail on an import.
MLFLOW_FEATURES = re.compile(r"\bragsweep\.tracking\.(?:traces|label_draws|feedback_labels)\b")


def _mlflow_names(source: str) -> list[str]:
    return [match.group(0) for match in MLFLOW_NAMES.finditer(source)]


def test_what_reads_runs_outside_tracking_uses_none_of_mlflows_names():
    used = {path.relative_to(SRC).as_posix(): found for path in OUTSIDE_TRACKING
            if (found := _mlflow_names(path.read_text()))}
    assert not used, ("read runs as tracking.base.TrackedRun, tables of them with tracking.table's columns, a store's "
                      f"file with local_database(): {used}")


def test_mlflows_own_features_are_reached_through_the_run_store():
    imports = sorted(path.relative_to(SRC).as_posix() for path in OUTSIDE_TRACKING
                     if MLFLOW_FEATURES.search(path.read_text()))
    assert not imports, f"call RunStore.place_draw, RunStore.human_labels or Tracker.log_query_traces: {imports}"
    assert MLFLOW_FEATURES.search("    from ragsweep.tracking.label_draws import place_draw")  # the scan sees one


@pytest.mark.parametrize("line", ['runs[f"metrics.{metric}"]', 'row.get("params.k")', 'run["tags.dataset.name"]',
                                  'c.startswith("params.")', 'tags.get("mlflow.runName")', "'mlflow.parentRunId'",
                                  'f"sqlite:///{path}"', 'uri.removeprefix("sqlite:///")', "mlflow.search_runs([id])"])
def test_the_scan_sees_mlflows_names(line):
    assert _mlflow_names(line), line


@pytest.mark.parametrize("line", ['tracker.download(run_id, "metrics.json", folder)', "from ragsweep.metrics import x",
                                  """help='filter, e.g. "params.k <= 10 and params.chunker = fixed"'""",
                                  'help="MLflow store (default: sqlite:///<project>/mlruns/mlflow.db)"'])
def test_the_scan_leaves_what_is_not_mlflows_names(line):
    assert not _mlflow_names(line), line
