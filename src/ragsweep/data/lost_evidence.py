"""Quoted evidence that no parse of a dataset holds: told apart from what one parser lost, so a sweep's
preflight says a dataset's problem once rather than blame each parser for it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from ragsweep.types import Dataset


def lost_in_every_text(datasets: Sequence[Dataset]) -> dict[str, list[str]]:
    """By dataset name, the questions some of whose quoted evidence none of two or more parses of it holds (the
    datasets of a sweep's parsers): a problem of the dataset, said once, not of a parser."""
    parses: dict[str, dict[str, Dataset]] = defaultdict(dict)
    for dataset in datasets:
        if any(query.lost for query in dataset.queries):
            parses[dataset.name][dataset.documents_fingerprint] = dataset
        else:
            parses[dataset.name]["found"] = dataset  # a parse that lost nothing: nothing is lost everywhere
    found = {}
    for name, by_text in parses.items():
        if len(by_text) < 2 or "found" in by_text:
            continue
        lost = [{(query.id, quote) for query in dataset.queries for quote in query.lost}
                for dataset in by_text.values()]
        everywhere = set.intersection(*lost)
        if everywhere:
            found[name] = sorted({question for question, _ in everywhere})
    return found
