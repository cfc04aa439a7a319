"""A relevance judge learned from reference spans: does this passage hold the answer to this question?

Labels come from the dataset's spans (`metrics.relevance.span_relevance`): a window of the corpus that
holds a question's reference span is relevant to it, one that overlaps none of its spans is not. The
packaged all-MiniLM-L6-v2 sentence encoder is fine-tuned on (question, relevant window, irrelevant
window) triplets with the multiple-negatives ranking loss (Henderson et al., 2017, as sentence-transformers'
`MultipleNegativesRankingLoss`: softmax cross-entropy of the scaled cosine of each question against every
window of its batch, its own relevant window the target), half of the irrelevant windows taken from the
question's own document and worded like it, the hard negatives retrieval returns. A pair scores the
best cosine of the question and one of the passage's sentences, clipped to [0, 1] (as the embedding
judge does: an answer sits in a sentence or two, and a whole chunk's vector dilutes it), so training
windows are a few sentences long. Starting from an encoder trained for semantic search keeps what it
knows; a cross-encoder head trained from scratch on a few hundred pairs stayed at chance.

The cosine is averaged with the question's idf-weighted word coverage by the passage (`lexical_weight`,
`judging.lexical.TermWeights` over the dataset's documents): the passages a dense retriever returns are all
close to the question in meaning, and whether they share its rare words (a name, a year, a figure) is what
tells them apart most often. The weight is a fixed 0.5, fitted on nothing.

Out of fold: the questions are split into `folds` by a hash of their id, and fold f's questions are
scored by the model trained on the other folds, so a question is never judged by a model that saw its
spans. A question outside the dataset (a production question over the same corpus) is scored by the
first fold's model. Each fold's model is kept in the stage cache under `judges/<key>/`, keyed by its
questions' spans and the settings: paid once per dataset.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from ragsweep.identity import fingerprint
from ragsweep.cores import torch_threads
from ragsweep.data.loading import loaded
from ragsweep.judging.base import Pair, Verdict
from ragsweep.judging.embedding import sentences
from ragsweep.judging.training.finetune import (cached_model, check_encoder, encoder_path, optimizer_step,
                                      warmup_schedule)
from ragsweep.judging.lexical import TermWeights
from ragsweep.judging.training.span_triplets import Triplet, relevance_triplets
from ragsweep.types import Dataset, Query

log = logging.getLogger(__name__)

RECIPE = "span-relevance-3"  # bump when the example rules or the loss change: fold models are cached by it


class SpanTrainedRelevanceJudge:
    """Scores (question, passage) relevance with fold models fine-tuned on the dataset's span labels.

    Args:
        dataset: The labelled dataset (questions with reference spans), handed in by the runner.
        folds: Question folds (>= 2); each model trains on all folds but one.
        pairs_per_question: Triplets drawn per question.
        examples: Most triplets per fold model.
        window_chars: Shortest and longest training window, in characters (retrieved chunks vary as much).
        epochs: Passes over the triplets (>= 1).
        seed: Seeds the windows and the batch order.
        max_length: Tokens per text, 32-512.
        train_batch_size: Triplets per step; the other windows of a batch are each question's extra negatives.
        learning_rate: AdamW's peak rate, linear warm-up over 10% of the steps, then linear decay.
        scale: Cosine scale inside the softmax (sentence-transformers' default 20).
        model: Sentence-transformers folder to start from; null = the packaged all-MiniLM-L6-v2.
        cache_dir: Stage cache root; models go to `<cache_dir>/judges/<key>/`.
        threads: torch threads; null = this process's share of the cores, read again every training step and
            fold judged. Left out of the key.
        progress: Show a progress bar while training.
        lexical_weight: Weight in [0, 1] of the idf-weighted word coverage in a pair's score; 0 = the cosine alone.
            Left out of the fold models' key (it changes no training).
    """

    preload = ("torch", "sentence_transformers")
    enabled = True
    threshold = 0.5  # the Judge protocol's; relevance is measured by AUC, which needs no threshold

    def __init__(self, dataset: Any = None, folds: int = 2, pairs_per_question: int = 8, examples: int = 2000,
                 window_chars: Sequence[int] = (100, 500), epochs: int = 1, seed: int = 0, max_length: int = 128,
                 train_batch_size: int = 16, learning_rate: float = 2e-5, scale: float = 20.0,
                 model: str | None = None, cache_dir: str = ".cache/ragsweep", threads: int | None = None,
                 progress: bool = True, lexical_weight: float = 0.5) -> None:
        for key, value, low in (("folds", folds, 2), ("pairs_per_question", pairs_per_question, 1),
                                ("examples", examples, 2), ("epochs", epochs, 1), ("seed", seed, 0),
                                ("train_batch_size", train_batch_size, 2)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"relevance_judge.{key} must be an integer >= {low}, got {value!r}")
        if (len(window_chars) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in window_chars)
                or not 50 <= window_chars[0] <= window_chars[1]):
            raise ValueError(f"relevance_judge.window_chars must be [shortest, longest] characters, 50 <= shortest "
                             f"<= longest, got {list(window_chars)!r}")
        if isinstance(max_length, bool) or not isinstance(max_length, int) or not 32 <= max_length <= 512:
            raise ValueError(f"relevance_judge.max_length must be an integer in [32, 512], got {max_length!r}")
        for key, value in (("learning_rate", learning_rate), ("scale", scale)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"relevance_judge.{key} must be > 0, got {value!r}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ValueError(f"relevance_judge.threads must be null or an integer >= 1, got {threads!r}")
        if (isinstance(lexical_weight, bool) or not isinstance(lexical_weight, (int, float))
                or not 0 <= lexical_weight <= 1):
            raise ValueError(f"relevance_judge.lexical_weight must be a number in [0, 1], got {lexical_weight!r}")
        check_encoder(model, "relevance_judge.model")
        self.lexical_weight = float(lexical_weight)
        self.dataset, self.folds, self.threads, self.progress = dataset, folds, threads, progress
        self.settings = {"recipe": RECIPE, "folds": folds, "pairs_per_question": pairs_per_question,
                         "examples": examples, "window_chars": list(window_chars), "epochs": epochs, "seed": seed,
                         "max_length": max_length, "train_batch_size": train_batch_size,
                         "learning_rate": float(learning_rate), "scale": float(scale), "model": model or "minilm"}
        self.base_model, self.cache_dir = model, Path(cache_dir)

    @cached_property
    def labelled(self) -> Dataset:
        corpus = self.dataset
        if corpus is None:
            raise ValueError("relevance_judge.dataset: span_trained learns from a dataset with reference spans; "
                             "a sweep passes its dataset")
        corpus = loaded(corpus)
        if not isinstance(corpus, Dataset) or not corpus.queries:
            raise ValueError("relevance_judge=span_trained needs a dataset of questions with reference spans")
        return corpus

    @cached_property
    def term_weights(self) -> TermWeights:
        """The idf of the dataset's words, for the lexical half of a pair's score."""
        return TermWeights.from_texts(document.text for document in self.labelled.documents.values())

    def fold_of(self, query_id: str) -> int:
        """The fold a question belongs to: a hash of its id, the same in every process."""
        return int(fingerprint("fold", query_id)[:8], 16) % self.folds

    def training_questions(self, fold: int) -> list[Query]:
        """The questions fold `fold`'s model learns from: every other fold's."""
        return [query for query in self.labelled.queries if self.fold_of(query.id) != fold]

    def fold_key(self, fold: int) -> str:
        return fingerprint("span-relevance", self.labelled.fingerprint, fold, self.settings,
                           [(query.id, query.text, [ref.to_dict() for ref in query.references])
                            for query in self.training_questions(fold)])

    @property
    def model_key(self) -> str:
        """The fold models' identity; the runner mixes it into verdict keys."""
        return fingerprint("span-relevance-models", [self.fold_key(fold) for fold in range(self.folds)])

    def preflight(self) -> None:
        """Train (or find) every fold's model and load them, so a sweep waits here, not mid-run."""
        self._models  # noqa: B018

    @cached_property
    def _models(self) -> list[Any]:
        from sentence_transformers import SentenceTransformer

        folders = [self.build(fold) for fold in range(self.folds)]
        return [SentenceTransformer(str(folder), device="cpu") for folder in folders]

    def build(self, fold: int) -> Path:
        """Fold `fold`'s model folder: from the cache, or trained now (one process trains, the others wait)."""
        folder = self.cache_dir / "judges" / self.fold_key(fold)[:32]
        return cached_model(self.cache_dir, folder, lambda partial: self._train(fold, partial))

    def _train(self, fold: int, folder: Path) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        started, s = time.perf_counter(), self.settings
        torch.manual_seed(s["seed"])
        questions = self.training_questions(fold)
        log.info("training the span relevance judge, fold %d of %d: %d questions (once per dataset; kept in %s)",
                 fold + 1, self.folds, len(questions), self.cache_dir / "judges")
        model = SentenceTransformer(encoder_path(self.base_model, self.cache_dir), device="cpu")
        model.max_seq_length = s["max_length"]
        triplets = relevance_triplets(self.labelled, questions, s["examples"], s["pairs_per_question"],
                                      s["window_chars"], s["seed"] + fold)
        losses = self._fit(model, triplets, fold)
        model.save(str(folder))
        record = {"settings": s, "fold": fold, "questions": len(questions), "triplets": len(triplets),
                  "same_document": sum(t.kind == "same_document" for t in triplets),
                  "seconds": round(time.perf_counter() - started, 1), "threads": torch.get_num_threads(),
                  "loss_per_20_steps": [round(sum(losses[i:i + 20]) / len(losses[i:i + 20]), 4)
                                        for i in range(0, len(losses), 20)]}
        (folder / "training.json").write_text(json.dumps(record, indent=1))  # last: its presence marks a whole model
        log.info("trained relevance judge fold %d in %.1f min (%d triplets)", fold, record["seconds"] / 60,
                 len(triplets))

    def _fit(self, model: Any, triplets: list[Triplet], fold: int) -> list[float]:
        """Multiple-negatives ranking loss: for question i of a batch, softmax over scale · cos(q_i, w) for every
        relevant and irrelevant window w of the batch, cross-entropy against its own relevant window."""
        import torch

        s = self.settings
        rng = random.Random(s["seed"] + fold)
        size = s["train_batch_size"]
        steps = (len(triplets) + size - 1) // size * s["epochs"]
        optimizer = torch.optim.AdamW(model.parameters(), lr=s["learning_rate"], weight_decay=0.01)
        schedule = warmup_schedule(optimizer, steps)
        losses: list[float] = []
        model.train()
        with tqdm(total=steps, desc="training relevance judge", unit="step", disable=not self.progress) as bar:
            for _ in range(s["epochs"]):
                order = rng.sample(triplets, len(triplets))
                for start in range(0, len(order), size):
                    batch = order[start:start + size]
                    if len(batch) < 2:
                        continue
                    with torch_threads(self.threads):
                        questions = self._embed(model, [t.question for t in batch])
                        windows = self._embed(model, [t.relevant for t in batch] + [t.irrelevant for t in batch])
                        scores = s["scale"] * questions @ windows.T
                        loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))
                        optimizer_step(model, optimizer, schedule, loss, losses, bar, window=20)
        model.eval()
        return losses

    @staticmethod
    def _embed(model: Any, texts: list[str]) -> Any:
        import torch

        features = model.tokenize(texts)
        return torch.nn.functional.normalize(model(features)["sentence_embedding"], dim=-1)

    def judge(self, pairs: Sequence[Pair], batch_size: int = 32) -> list[Verdict]:
        """(1 - lexical_weight) · max over the passage's sentences of cos(question, sentence), under the model that
        never saw the question's spans, clipped to [0, 1], + lexical_weight · the question's idf-weighted word
        coverage by the passage."""
        try:
            models = self._models
        except Exception as error:  # every pair fails the same way; the runner counts them
            return [Verdict(None, "error", f"{type(error).__name__}: {error}") for _ in pairs]
        fold_of = {query.text: self.fold_of(query.id) for query in self.labelled.queries}
        verdicts: list[Verdict] = [Verdict(None, "error", "not judged")] * len(pairs)
        by_fold: dict[int, list[int]] = {}
        for i, pair in enumerate(pairs):
            by_fold.setdefault(fold_of.get(pair.claim, 0), []).append(i)
        weight = self.lexical_weight
        for fold, positions in by_fold.items():
            split = [sentences(pairs[i].passage) for i in positions]
            try:
                with torch_threads(self.threads):
                    questions = models[fold].encode([pairs[i].claim for i in positions], batch_size=batch_size,
                                                    normalize_embeddings=True, show_progress_bar=False)
                    vectors = models[fold].encode([text for each in split for text in each], batch_size=batch_size,
                                                  normalize_embeddings=True, show_progress_bar=False)
            except Exception as error:
                for i in positions:
                    verdicts[i] = Verdict(None, "error", f"{type(error).__name__}: {error}")
                continue
            row = 0
            for i, question, each in zip(positions, questions, split, strict=True):
                cosine = float((vectors[row:row + len(each)] @ question).max())
                row += len(each)
                words = self.term_weights.coverage(pairs[i].claim, pairs[i].passage) if weight else 0.0
                score = (1 - weight) * min(1.0, max(0.0, cosine)) + weight * words
                verdicts[i] = Verdict(min(1.0, max(0.0, score)), "ok", f"cosine {cosine:.6f}, words {words:.6f}")
        return verdicts
