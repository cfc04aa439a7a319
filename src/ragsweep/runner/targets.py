"""What a config's `_target_` names, read without building it: its class, whether it does its stage's work, whether
it is a whole retriever, the candidates a reranker reads. The plan decides a job's shape from these."""

from __future__ import annotations

import inspect
from typing import Any

from ragsweep.hydra_internals import locate


def enabled(target: str | None) -> bool:
    """Whether the class `target` names does its stage's work: `none` options (`NoGenerator`, `NoJudge`) set
    `enabled = False`. A target that does not import counts as enabled, so that building it names the
    error."""
    component = target_class(target)
    return component is None or getattr(component, "enabled", True) is not False


def whole_retriever(target: str | None) -> bool:
    """A retriever class that is a whole retrieval pipeline: `retrieve(question, k)`, not a store's search."""
    component = target_class(target)
    return component is not None and hasattr(component, "retrieve")


def reranker_candidates(target: str | None, given: Any) -> int:
    """First-stage hits the reranker `target` names reads: its `candidates` setting (`given`), else its
    constructor's default, else the class's own (0 for the pass-through)."""
    if given is not None:
        valid = isinstance(given, int) and not isinstance(given, bool)
        return int(given) if valid else 0  # build names a bad value
    component = target_class(target)
    if component is None:
        return 0
    parameter = inspect.signature(component).parameters.get("candidates")
    if parameter is not None and isinstance(parameter.default, int):
        return parameter.default
    value = getattr(component, "candidates", 0)
    return value if isinstance(value, int) else 0


def target_class(target: str | None) -> type | None:
    """The class `target` names, or None when there is none or it does not import (`build` then names it)."""
    if target is None:
        return None
    try:
        return locate(str(target))
    except (ImportError, ValueError):  # a bad _target_: build names it
        return None
