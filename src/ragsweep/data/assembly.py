"""A loader's documents and questions made one `Dataset`, each duplicate id or empty text refused where it is,
so every loader checks its items the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from ragsweep.data.base import DatasetError
from ragsweep.types import Dataset, Document, MovedSpan, Query


def build_dataset(name: str, documents: Iterable[tuple[str, Document]], queries: Iterable[tuple[str, Query]],
                  source: str, loading: dict[str, int] | None = None, repairs: Iterable[MovedSpan] = ()) -> Dataset:
    """Assemble a dataset from (where, item) pairs, rejecting duplicate ids and empty texts where they are
    (`where` is the file, or the file and line, that the item came from); `loading` counts what the
    loader changed or left out (`Dataset.loading`), `repairs` the spans it moved (`Dataset.repairs`)."""
    by_id: dict[str, Document] = {}
    found: dict[str, str] = {}
    for where, document in documents:
        if document.id in by_id:
            raise DatasetError(f"{where}: duplicate document id {document.id!r} (also {found[document.id]})")
        if not document.text.strip():
            raise DatasetError(f"{where}: document {document.id!r} is empty; give it text or remove it")
        by_id[document.id], found[document.id] = document, where
    asked: dict[str, str] = {}
    query_list = []
    for where, query in queries:
        if query.id in asked:
            raise DatasetError(f"{where}: duplicate query id {query.id!r} (first at {asked[query.id]}); "
                               "give each question its own id")
        if not query.text.strip():
            raise DatasetError(f"{where}: query {query.id!r} has an empty question")
        asked[query.id] = where
        query_list.append(query)
    if not query_list:
        raise DatasetError(f"{source}: no queries found; a dataset needs at least one question")
    return Dataset(name, by_id, query_list, dict(loading or {}), repairs=tuple(repairs))
