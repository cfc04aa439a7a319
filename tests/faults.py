"""Fault injection for sweep tests: a retriever that always raises.

Not a stand-in for a real part: real retrievers run in these tests too. A job has to fail for
real, inside a real Hydra multirun subprocess, to show that failures are recorded and the sweep
goes on; this is the one component built to do that.
"""

from __future__ import annotations


class ExplodingRetriever:
    def __init__(self, embedder=None, store=None) -> None:
        pass

    def index(self, chunks) -> None:
        raise RuntimeError("retriever exploded on purpose (tests/faults.py)")

    def search(self, questions, k):
        raise AssertionError("unreachable: index() raises first")
