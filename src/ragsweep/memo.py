"""In-process memory for work a sweep process would otherwise repeat for every job."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")


def remember(store: dict[Hashable, T], key: Hashable, compute: Callable[[], T], limit: int) -> T:
    """`compute()` once per key, keeping at most `limit` entries (the oldest is dropped first)."""
    if key not in store:
        if len(store) >= limit:
            store.pop(next(iter(store)))
        store[key] = compute()
    return store[key]
