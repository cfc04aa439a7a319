"""The in-process memos a sweep process keeps."""

from ragsweep.memo import remember


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
