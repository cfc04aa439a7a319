"""`ragsweep.load_pipeline`: an exported configuration (`conf/best/NAME.yaml`) as a pipeline in your own code.

The stages are built from the same config the sweep ran and read the same stage cache, so the corpus's
chunks and embeddings computed by the sweep are reused, and an answer the sweep generated for the same
prompt is handed back rather than generated again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ragsweep.data.loading import loaded
from ragsweep.runner.build import Pipeline, build
from ragsweep.runner.context import Context, passed_on
from ragsweep.runner.errors import ConfigError, yaml_problem
from ragsweep.runner.plan import plan_job
from ragsweep.runner.generating import generate
from ragsweep.runner.stages import chunk_dataset
from ragsweep.types import Chunk, Dataset

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetrievedPassage:
    """A retrieved passage: `text == document[start:end]` of document `doc_id`, and the score it ranked by."""

    doc_id: str
    start: int
    end: int
    text: str
    score: float


class LoadedPipeline:
    """One configuration's stages over its dataset's corpus: `retrieve(question)` and, with a generator,
    `answer(question)`."""

    def __init__(self, pipeline: Pipeline, dataset: Dataset) -> None:
        self.k = pipeline.plan.k
        self.has_generator = pipeline.generator is not None
        self._pipeline = pipeline
        self._chunks, _ = chunk_dataset(pipeline, dataset)
        self._documents = dataset.documents
        pipeline.retriever.component.index(self._chunks)  # the chunks' embeddings come from the stage cache

    def retrieve(self, question: str, k: int | None = None) -> list[RetrievedPassage]:
        """The passages the configuration passes on for `question`: its top `k` (default: the configuration's k),
        reranked, cut and widened as configured."""
        context = self._context(question, k or self.k)
        return [self._passage(context.chunks[hit.index], hit.score) for hit in context.hits[0]]

    def answer(self, question: str) -> str:
        """The configured generator's answer from the passages passed on; RuntimeError when generation fails."""
        if not self.has_generator:
            raise ValueError("this configuration has no generator (generator=none): use retrieve(question), or "
                             "export a configuration with one")
        context = self._context(question, self.k)
        made = generate(self._pipeline, [question], context.chunks, context.hits)[0]
        if made.error is not None:
            raise RuntimeError(f"generation failed: {made.error}")
        return made.answer

    def _context(self, question: str, k: int) -> Context:
        pipeline, candidates = self._pipeline, self._pipeline.plan.candidates
        with pipeline.cache.embeddings_bypassed():  # a user's question is in no cache
            hits = pipeline.retriever.component.search([question], max(k, candidates))[0]
            if candidates:
                hits = pipeline.reranker.component.rerank([question], self._chunks, [hits[:candidates]])[0]
        return passed_on(pipeline, [question], self._chunks, [hits[:k]], self._documents)

    @staticmethod
    def _passage(chunk: Chunk, score: float) -> RetrievedPassage:
        return RetrievedPassage(chunk.doc_id, chunk.start, chunk.end, chunk.text, float(score))


def load_pipeline(path: str | Path) -> LoadedPipeline:
    """The configuration exported by `ragsweep best` at `path` (`conf/best/NAME.yaml`), ready to query.

    ConfigError (one line naming the file) when it is missing, not YAML, or a configuration whose retriever
    is a Python object of your own (which no YAML holds: call your retriever directly).
    """
    path = Path(path)
    cfg = _read(path)
    if OmegaConf.select(cfg, "retriever._target_") == "ragsweep.retrieval.own.OwnRetriever":
        raise ConfigError(f"{path}: its retriever is an object of your own, which the file cannot rebuild; "
                          "call that retriever directly")
    pipeline = build(plan_job(cfg), preflight=True)
    dataset = loaded(pipeline.dataset)
    log.info("loaded %s: k=%d over %d documents of %s", path, pipeline.plan.k, len(dataset.documents), dataset.name)
    return LoadedPipeline(pipeline, dataset)


def _read(path: Path) -> DictConfig:
    import yaml

    if not path.is_file():
        raise ConfigError(f"{path}: no such file; export one with `ragsweep best` (it writes conf/best/NAME.yaml)")
    try:
        cfg = OmegaConf.load(path)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: {yaml_problem(error)}; export it again with `ragsweep best`") from None
    if not isinstance(cfg, DictConfig) or "retriever" not in cfg or "k" not in cfg:
        raise ConfigError(f"{path}: not a configuration exported by `ragsweep best` (no retriever or k)")
    cfg.pop("hydra", None)
    return cfg

