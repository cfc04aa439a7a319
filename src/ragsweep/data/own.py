"""A dataset built in Python (`ragsweep.types.Dataset`) and handed to `ragsweep.Evaluation`."""

from __future__ import annotations

from ragsweep.data.base import DatasetError
from ragsweep.types import Dataset


class GivenDataset:
    """Loads the Dataset object it was given; runs record its name and content fingerprint, as for a loaded one."""

    def __init__(self, component: Dataset | None = None, name: str | None = None) -> None:
        if not isinstance(component, Dataset):
            raise DatasetError("dataset: GivenDataset holds a ragsweep.types.Dataset passed to "
                               "ragsweep.Evaluation(dataset=...); on the command line use dataset=native "
                               f"with dataset.path=<folder> (got {type(component).__name__})")
        self.component, self.name = component, name or component.name

    def load(self) -> Dataset:
        documents = self.component.documents
        for query in self.component.queries:
            for span in query.references:
                size = len(documents[span.doc_id].text) if span.doc_id in documents else None
                if size is None or not 0 <= span.start < span.end <= size:
                    where = "no such document" if size is None else f"the document has {size} characters"
                    raise DatasetError(f"dataset {self.name}: question {query.id!r} has reference {span.doc_id}"
                                       f"[{span.start}:{span.end}] ({where}); a reference must be a non-empty span "
                                       "inside one of the dataset's documents")
        return self.component
