"""A whole retrieval pipeline ragsweep did not build, scored on spans like its own.

A user's retriever (LangChain's `BaseRetriever`, a function over their vector database) chunks and
indexes on its own and returns texts. Each text is located in the documents (`data.locate`), so span
metrics score what it retrieved. ragsweep never sees the retriever's whole chunking, so the metrics
that need it (recall and nDCG/MAP over every relevant chunk, precision-Ω) are left out of its runs.
"""

from __future__ import annotations

from typing import Any


class OwnRetriever:
    """Wraps `component`: a LangChain retriever (`invoke(question)` returning Documents; it decides how many)
    or a callable `(question, k)` returning texts or `(text, score)` pairs, best first.

    Args:
        component: The retriever (given by `ragsweep.Evaluation`, or built from a nested `_target_` in YAML).
        name, version: Its identity in the cache and the run's params when given as an object (see OwnChunker).
        min_similarity: How alike a text must be to the documents' text to be located by fuzzy search.
    """

    def __init__(self, component: Any = None, name: str | None = None, version: str | None = None,
                 min_similarity: float = 0.9) -> None:
        if component is None:
            raise ValueError("retriever: OwnRetriever wraps a retriever: pass it to "
                             "ragsweep.Evaluation().run(retriever=...), or give retriever.component a _target_ "
                             "in your own YAML (--config-dir)")
        if not hasattr(component, "invoke") and not callable(component):
            raise ValueError(f"retriever: {type(component).__name__} has no invoke(question) and is not callable "
                             "as retriever(question, k)")
        if not 0 < min_similarity <= 1:
            raise ValueError(f"retriever.min_similarity must be in (0, 1], got {min_similarity!r}")
        self.component, self.name, self.version, self.min_similarity = component, name, version, min_similarity

    def retrieve(self, question: str, k: int) -> list[tuple[str, float]]:
        """The first `k` texts the component returns for `question`, with their scores (NaN where it gives none)."""
        if hasattr(self.component, "invoke"):
            results = self.component.invoke(question)
        else:
            results = self.component(question, k)
        return [_text_and_score(result) for result in list(results)[:k]]


def _text_and_score(result: Any) -> tuple[str, float]:
    if isinstance(result, str):
        return result, float("nan")
    if isinstance(result, tuple) and len(result) == 2:
        text, score = result
        return str(getattr(text, "page_content", text)), float(score)
    if hasattr(result, "page_content"):  # a LangChain Document; some retrievers put a score in its metadata
        score = (getattr(result, "metadata", None) or {}).get("score", float("nan"))
        return str(result.page_content), float(score)
    raise TypeError(f"retriever: returned {type(result).__name__}; return texts, (text, score) pairs or "
                    "LangChain Documents")
