"""Support as entailment: an NLI sequence-classification model reads (premise = passage, hypothesis = claim).

    score = softmax(logits)[entailment]          (a model with several labels, e.g. DeBERTa MNLI)
    score = sigmoid(logit)                       (a single-logit model, e.g. HHEM-style consistency scorers)

This is the SummaC / TRUE recipe for factual consistency (Laban et al., 2022; Honovich et al., 2022)
at the granularity of one claim against one passage. For task "relevance" the hypothesis is the
question: NLI models are trained to tell whether a statement follows, not whether a question is
answered, so expect a weak relevance signal (a question is rarely "entailed" by anything); prefer the
likelihood or llm judge for relevance.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ragsweep.cores import torch_threads
from ragsweep.interrupts import uninterrupted
from ragsweep.judging.base import Pair, Verdict, check_threshold

log = logging.getLogger(__name__)


def entailment_index(id2label: Mapping[int, str], wanted: str | int | None) -> int | None:
    """The logit column holding entailment: `wanted` by name (case-insensitive) or id, else the label
    named "entailment"; None for a single-logit model (scored by sigmoid).

    Raises:
        ValueError: no such label, with the model's labels in the message.
    """
    if len(id2label) == 1:
        return None
    labels = {int(i): str(name) for i, name in id2label.items()}
    if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted in labels:
        return wanted
    name = (wanted if isinstance(wanted, str) else "entailment").lower()
    for i, label in labels.items():
        if label.lower() == name:
            return i
    raise ValueError(f"judge.entailment_label={wanted!r} matches none of the model's labels {labels}; "
                     "set judge.entailment_label to the entailment label's name or id")


class NLIJudge:
    """Entailment probability of the claim given the passage, from a local NLI model.

    No NLI model ships offline: `model_path` is a folder holding one (e.g. a downloaded
    microsoft/deberta-large-mnli); the judge fails when built or in preflight when it cannot load.

    Args:
        model_path: Folder of a transformers sequence-classification model and its tokenizer.
        entailment_label: Name (case-insensitive) or id of the entailment label; null finds the label
            named "entailment" in the model's config.id2label. Unused by single-logit models.
        threshold: Score at which a claim counts as supported (set by `ragsweep calibrate`).
        batch_size: Pairs per forward pass.
        max_length: Tokens per pair, longest part cut first; null (or more) = the model's maximum.
        threads: torch threads; null = this process's share of the cores, read again every batch.
        max_failure_rate: Share of failed pairs a run may have (checked by the runner).
    """

    preload = ("torch", "transformers")  # libraries its work imports (runner.workers)

    def __init__(self, model_path: str, entailment_label: str | int | None = None, threshold: float = 0.5,
                 batch_size: int = 16, max_length: int | None = None, threads: int | None = None,
                 max_failure_rate: float = 0.05) -> None:
        if not model_path or not Path(str(model_path)).expanduser().is_dir():
            raise ValueError(f"judge.model_path={model_path!r} is not a folder; no NLI model ships offline: "
                             "download one (e.g. microsoft/deberta-large-mnli) and set judge.model_path to its folder")
        check_threshold(threshold)
        for key, value in (("batch_size", batch_size), ("max_length", max_length), ("threads", threads)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
                raise ValueError(f"judge.{key} must be an integer > 0, got {value!r}")
        if not 0.0 <= max_failure_rate <= 1.0:
            raise ValueError(f"judge.max_failure_rate must be a share in [0, 1], got {max_failure_rate!r}")
        self.model_path = str(Path(model_path).expanduser())
        self.entailment_label, self.threshold, self.batch_size = entailment_label, float(threshold), batch_size
        self.max_length, self.threads, self.max_failure_rate = max_length, threads, float(max_failure_rate)

    def preflight(self) -> None:
        """Load the model and find its entailment label now, before any work."""
        self._loaded()

    def judge(self, pairs: Sequence[Pair]) -> list[Verdict]:
        tokenizer, model, column, max_length = self._loaded()
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i].passage) + len(pairs[i].claim))  # less padding
        verdicts: list[Verdict | None] = [None] * len(pairs)
        batches = [order[i: i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        for batch in tqdm(batches, desc="nli judge", unit="batch", disable=len(batches) < 10):
            message = ""
            try:
                with torch_threads(self.threads):
                    scores = self._scores(tokenizer, model, column, max_length, [pairs[i] for i in batch])
            except (RuntimeError, ValueError) as error:  # e.g. out of memory, a tokenizer refusing the input
                log.warning("nli judge failed on a batch of %d pairs: %s", len(batch), error)
                scores = [None] * len(batch)
                message = f"{type(error).__name__}: {error}"
            for i, score in zip(batch, scores):
                verdicts[i] = Verdict(score, "ok", f"p={score:.4f}") if score is not None else Verdict(None, "error", message)
        return verdicts  # type: ignore[return-value]

    @staticmethod
    def _scores(tokenizer, model, column: int | None, max_length: int, pairs: Sequence[Pair]) -> list[float]:
        import torch

        inputs = tokenizer([p.passage for p in pairs], [p.claim for p in pairs], truncation=True,
                           max_length=max_length, padding=True, return_tensors="pt")
        with torch.inference_mode():
            logits = model(**inputs).logits.double()
        probabilities = torch.sigmoid(logits[:, 0]) if column is None else torch.softmax(logits, dim=-1)[:, column]
        return np.clip(probabilities.numpy(), 0.0, 1.0).tolist()

    def _loaded(self):
        try:
            tokenizer, model = _load(self.model_path)
        except Exception as error:  # any failure to load means the same thing to the user
            raise ValueError(f"judge.model_path={self.model_path} cannot be loaded as a sequence-classification "
                             f"model ({type(error).__name__}: {str(error).splitlines()[0][:160]}); point it at a "
                             "folder holding an NLI model and its tokenizer (config.json, weights, tokenizer files)") from None
        column = entailment_index(model.config.id2label, self.entailment_label)
        limit = min(tokenizer.model_max_length, getattr(model.config, "max_position_embeddings", None) or 512)
        return tokenizer, model, column, min(self.max_length or limit, limit)


@cache
@uninterrupted
def _load(model_path: str):
    """One loaded model per process: a sweep's check and its jobs each build a judge."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    log.info("loading NLI model %s", model_path)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    return tokenizer, AutoModelForSequenceClassification.from_pretrained(model_path).eval()
