"""In-process memory for work a sweep process would otherwise repeat for every job."""

from __future__ import annotations

import gc
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from ragsweep._memory import release_memory

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_CLEARS: list[Callable[[], None]] = []


def process_memo() -> dict[Any, Any]:
    """A dict that lives as long as the process, emptied by `forget_all`."""
    memo: dict[Any, Any] = {}
    _CLEARS.append(memo.clear)
    return memo


def forgettable(cached: F) -> F:
    """Register a `functools.cache`d function (a loaded model, say) with `forget_all`."""
    _CLEARS.append(cached.cache_clear)  # type: ignore[attr-defined]
    return cached


def remember(store: dict[Hashable, T], key: Hashable, compute: Callable[[], T], limit: int) -> T:
    """`compute()` once per key, keeping at most `limit` entries (the oldest is dropped first)."""
    if key not in store:
        if len(store) >= limit:
            store.pop(next(iter(store)))
        store[key] = compute()
    return store[key]


def forget_all() -> None:
    """Drop every in-process memo and loaded model and return the freed memory to the OS.

    What a sweep process's exit does, for a process that goes on after its jobs (a benchmark, a notebook).
    """
    for clear in _CLEARS:
        clear()
    gc.collect()
    release_memory()
