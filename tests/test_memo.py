"""The in-process memos a sweep process keeps, and letting go of them."""

from functools import cache

from ragsweep.memo import forget_all, forgettable, process_memo, remember
from ragsweep.runner import stages


def test_remember_computes_once_and_drops_the_oldest_entry_past_the_limit() -> None:
    store: dict[str, int] = {}
    calls: list[str] = []

    def compute(key: str) -> int:
        calls.append(key)
        return len(calls)

    assert remember(store, "a", lambda: compute("a"), limit=2) == 1
    assert remember(store, "a", lambda: compute("a"), limit=2) == 1
    remember(store, "b", lambda: compute("b"), limit=2)
    remember(store, "c", lambda: compute("c"), limit=2)
    assert calls == ["a", "b", "c"]
    assert list(store) == ["b", "c"]


def test_forget_all_empties_every_registered_memo_and_cached_loader() -> None:
    memo = process_memo()
    memo["chunks"] = [1, 2, 3]
    loads: list[str] = []

    @forgettable
    @cache
    def load(name: str) -> str:
        loads.append(name)
        return name

    load("model")
    load("model")
    stages._CHUNKS["a chunking"] = []  # the runner's own memos are registered too
    forget_all()
    assert memo == {}
    assert "a chunking" not in stages._CHUNKS
    load("model")
    assert loads == ["model", "model"]
