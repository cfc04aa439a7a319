"""A support judge fine-tuned here, per corpus, on claims made from that corpus (FactCC's recipe).

No labelled support data and no NLI model ship offline, and the offline scores that need no training
(word overlap, MiniLM cosine, SmolLM2 likelihood) sit at chance on hard negatives. So this judge
trains one: all-MiniLM-L6-v2's encoder with a fresh one-logit head, fitted with binary cross-entropy
on `synthetic.make_examples` of the corpus it will judge (Kryściński et al., 2020), then scores a
pair as sigmoid(logit). The model is built once per (corpus, settings, seed) and kept in the stage
cache under `judges/<key>/`, so a sweep and its reruns train it at most once.
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from ragsweep.identity import fingerprint
from ragsweep.cores import torch_threads
from ragsweep.data.loading import loaded
from ragsweep.judging.training.alignment import align, aligned_claims, claims_key
from ragsweep.judging.training.answer_examples import answer_examples
from ragsweep.judging.base import Pair, Verdict, check_threshold
from ragsweep.judging.training.finetune import cached_model, check_encoder, encoder_path, quiet_transformers
from ragsweep.judging.training.pair_loss import fit_pairs
from ragsweep.judging.training.synthetic import make_examples

log = logging.getLogger(__name__)


class TrainedJudge:
    """MiniLM cross-encoder fine-tuned on the corpus's own synthetic claims; scores sigmoid(logit).

    Trained for support: for task "relevance" it scores (question, passage) the same way, i.e. "does the
    passage state what the question asks about", a proxy, not a relevance model.

    Args:
        dataset: The corpus to train on, handed in by the runner or `ragsweep train-judge`: a `Dataset`,
            its loader, a {doc_id: Document} mapping or a list of texts (e.g. a claims file's passages).
        examples: Synthetic (passage, claim) pairs to train on (>= 2; half supported).
        epochs: Passes over them (>= 1).
        seed: Seeds the examples, the head's initialisation and the batch order.
        threshold: Score at which a claim counts as supported, in [0, 1] (`ragsweep calibrate` sets it).
        max_length: Tokens per (passage, claim) input, 32-512.
        window_sentences: A passage of more sentences is judged in windows of this many consecutive sentences
            (also cut to fit `max_length`) and gets its best window's score: the model was trained on passages
            of 1-3 sentences, and a claim drawn from one of 8 sentences was missed (SummaC judges sentence
            windows likewise). null = whole passages, windowed only when too long. Not part of the model's key.
        train_batch_size: Pairs per training step (>= 1); part of the model's key, as it changes the model.
        learning_rate: AdamW's peak rate for the encoder (> 0; the fresh head gets 10x), linear warm-up over 10%
            of the steps, then linear decay.
        model: Encoder to start from: `minilm` or null (the packaged all-MiniLM-L6-v2), `mpnet` (all-mpnet-base-v2,
            the `mpnet` extra) or a model folder.
        answers: Also train on pairs made from a QA dataset's reference answers and spans (`answer_examples`).
        answers_dataset: The QA dataset for `answers`; null = `dataset` (a sweep's own, when it has answers).
        aligned_on: People's labelled claims to align the model with after training (`alignment`): a claims file
            whose passages are texts (`ragsweep align-judge` writes one), or a list of `LabelledClaim`.
        align_epochs: Passes over the labelled claims and as many of its own pairs when aligning (>= 1).
        cache_dir: Stage cache root; the model goes to `<cache_dir>/judges/<key>/`.
        threads: torch threads; null = this process's share of the cores, read again every training step and
            batch judged. Left out of the key. With other processes busy on a 2-core machine, 1 thread trained
            about 3x faster than 2 (2.7 vs 8.9 s a step).
        progress: Show a progress bar while training.
    """

    preload = ("torch", "transformers")
    # The training recipe (training/synthetic, claim_rules, answer_examples): raised when a rule changes, so the
    # judge trains again (the version is in its model's key) and runs it judged run again (`contract.VERSION`).
    version = "4"

    def __init__(self, dataset: Any = None, examples: int = 3000, epochs: int = 1, seed: int = 0,
                 threshold: float = 0.5, max_length: int = 256, train_batch_size: int = 16,
                 learning_rate: float = 1e-4, window_sentences: int | None = 3, model: str | None = None,
                 answers: bool = False, answers_dataset: Any = None, aligned_on: Any = None, align_epochs: int = 3,
                 cache_dir: str = ".cache/ragsweep", threads: int | None = None, progress: bool = True) -> None:
        check_threshold(threshold)
        for key, value, low in (("examples", examples, 2), ("epochs", epochs, 1), ("seed", seed, 0),
                                ("train_batch_size", train_batch_size, 1), ("align_epochs", align_epochs, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"judge.{key} must be an integer >= {low}, got {value!r}")
        if isinstance(max_length, bool) or not isinstance(max_length, int) or not 32 <= max_length <= 512:
            raise ValueError(f"judge.max_length must be an integer in [32, 512] (MiniLM's limit), got {max_length!r}")
        if not isinstance(learning_rate, (int, float)) or isinstance(learning_rate, bool) or not learning_rate > 0:
            raise ValueError(f"judge.learning_rate must be > 0, e.g. 1e-4, got {learning_rate!r}")
        if window_sentences is not None and (isinstance(window_sentences, bool)
                                             or not isinstance(window_sentences, int) or window_sentences < 1):
            raise ValueError(f"judge.window_sentences must be null or an integer >= 1, got {window_sentences!r}")
        check_encoder(model, "judge.model")
        if not isinstance(answers, bool):
            raise ValueError(f"judge.answers must be true or false, got {answers!r}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ValueError(f"judge.threads must be null or an integer >= 1, got {threads!r}")
        self.dataset, self.threshold, self.threads, self.progress = dataset, float(threshold), threads, progress
        self.settings = {"examples": examples, "epochs": epochs, "seed": seed, "max_length": max_length,
                         "train_batch_size": train_batch_size, "learning_rate": float(learning_rate),
                         "model": model or "minilm", "recipe": self.version}
        self.base_model, self.window_sentences = model, window_sentences
        self.answers, self.answers_dataset = answers, answers_dataset
        if answers:
            self.settings["answers"] = self.answer_source.fingerprint
        self.cache_dir = Path(cache_dir)
        self.aligned_claims, self.align_epochs = aligned_claims(aligned_on), align_epochs
        self.alignment = {"aligned_on": claims_key(self.aligned_claims),
                          "align_epochs": align_epochs} if self.aligned_claims else {}

    @cached_property
    def texts(self) -> list[str]:
        """The corpus as texts, in a fixed order (documents by id), so the same corpus gives the same key."""
        corpus = self.dataset
        if corpus is None:
            raise ValueError("judge.dataset: the trained judge needs a corpus to train on; a sweep passes its "
                             "dataset, `ragsweep train-judge` takes --dataset NAME or --claims FILE.jsonl")
        documents = getattr(loaded(corpus), "documents", corpus)  # a loader's dataset is read once per process
        if isinstance(documents, Mapping):
            return [documents[doc_id].text for doc_id in sorted(documents)]
        if isinstance(documents, Sequence) and all(isinstance(text, str) for text in documents):
            return list(documents)
        raise ValueError(f"judge.dataset must be a Dataset, its documents or a list of texts, got "
                         f"{type(self.dataset).__name__}")

    @cached_property
    def answer_source(self) -> Any:
        """The dataset whose reference answers and spans the judge also trains on (`answer_examples`)."""
        source = loaded(self.answers_dataset if self.answers_dataset is not None else self.dataset)
        if not any(query.answers for query in getattr(source, "queries", ())):
            raise ValueError("judge.answers=true needs a dataset with reference answers (sotu_qa, squad); "
                             "give one as judge.answers_dataset or set judge.answers=false")
        return source

    @property
    def model_key(self) -> str:
        """The model's identity: its corpus and training settings. The runner mixes it into verdict keys."""
        return fingerprint("trained-judge", fingerprint(self.texts), {**self.settings, **self.alignment})

    @property
    def path(self) -> Path:
        """The model's folder (it may not exist yet: `preflight` builds it)."""
        return self.cache_dir / "judges" / self.model_key[:32]

    def aligned(self, claims: Sequence[Any]) -> TrainedJudge:
        """This judge aligned with `claims` (labelled claims, `alignment`) instead of its own `aligned_on`."""
        judge = copy.copy(self)
        judge.__dict__.pop("_model", None)
        judge.aligned_claims = aligned_claims(list(claims))
        judge.alignment = {"aligned_on": claims_key(judge.aligned_claims), "align_epochs": self.align_epochs}
        return judge

    @property
    def base_path(self) -> Path:
        """The folder of the model before alignment (the model itself when there are no labels to align with)."""
        return self.cache_dir / "judges" / fingerprint("trained-judge", fingerprint(self.texts), self.settings)[:32]

    def preflight(self) -> None:
        """Train the model unless the cache has it, then load it, so a sweep fails or waits here, not mid-run."""
        self._model  # noqa: B018

    @cached_property
    def _model(self) -> tuple[Any, Any]:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        folder = self.build()
        model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
        return AutoTokenizer.from_pretrained(folder), model

    def build(self) -> Path:
        """The trained model's folder: from the cache, or trained now (one process trains, the others wait)."""
        base = cached_model(self.cache_dir, self.base_path, self._train)
        if not self.alignment:
            return base
        return cached_model(self.cache_dir, self.path, lambda folder: align(
            base, folder, self.aligned_claims, self.texts, {**self.settings, "epochs": self.alignment["align_epochs"]},
            self.threads, self.progress))

    def _train(self, folder: Path) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        started, s = time.perf_counter(), self.settings
        torch.manual_seed(s["seed"])
        base = encoder_path(self.base_model, self.cache_dir)
        log.info("training the support judge: %s fine-tuned on %d claims made from this corpus (no support model "
                 "ships offline); for 3000 on 2 cores about %s, once per corpus and settings, kept in %s",
                 self.base_model or "all-MiniLM-L6-v2", s["examples"],
                 "25 min" if self.base_model == "mpnet" else "4-9 min (MiniLM)", self.path)
        tokenizer = AutoTokenizer.from_pretrained(base)
        with quiet_transformers():  # its load report calls the fresh head MISSING: that head is what training fits
            model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
        examples = make_examples(self.texts, s["examples"], s["seed"])
        if self.answers:  # after whole (supported, unsupported) pairs, so each batch keeps its twins together
            examples = examples[: len(examples) // 2 * 2] + answer_examples(self.answer_source, s["seed"])
        losses = fit_pairs(model, tokenizer, examples, s, self.progress, self.threads)
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        seconds = time.perf_counter() - started
        record = {"settings": s, "corpus_texts": len(self.texts), "kinds": Counter(e.kind for e in examples),
                  "seconds": round(seconds, 1), "threads": torch.get_num_threads(),
                  "loss_per_50_steps": [round(sum(losses[i:i + 50]) / len(losses[i:i + 50]), 4)
                                        for i in range(0, len(losses), 50)]}
        (folder / "training.json").write_text(json.dumps(record, indent=1))  # last: its presence marks a whole model
        log.info("trained judge in %.1f min (%d examples, %d threads): %s", seconds / 60, len(examples),
                 torch.get_num_threads(), self.path)

    def judge(self, pairs: Sequence[Pair], batch_size: int = 32) -> list[Verdict]:
        """One verdict per pair: sigmoid of the model's logit, the best over the passage's windows."""
        try:
            tokenizer, model = self._model
        except Exception as error:  # every pair fails the same way; the runner counts them
            return [Verdict(None, "error", f"{type(error).__name__}: {error}") for _ in pairs]
        windows = [self._windows(tokenizer, pair) if pair.claim.strip() else [] for pair in pairs]
        inputs = [(window, pair.claim) for pair, each in zip(pairs, windows) for window in each]
        scores: list[float] = []
        try:
            import torch

            for start in range(0, len(inputs), batch_size):
                chunk = inputs[start: start + batch_size]
                encoded = tokenizer([p for p, _ in chunk], [c for _, c in chunk], truncation="only_first",
                                    max_length=self.settings["max_length"], padding=True, return_tensors="pt")
                with torch_threads(self.threads), torch.inference_mode():
                    scores += torch.sigmoid(model(**encoded).logits.squeeze(-1).float()).tolist()
        except Exception as error:
            return [Verdict(None, "error", f"{type(error).__name__}: {error}") for _ in pairs]
        verdicts, position = [], 0
        for each in windows:
            if not each:
                verdicts.append(Verdict(None, "error", "empty claim: nothing to judge"))
                continue
            best = max(scores[position: position + len(each)])
            verdicts.append(Verdict(min(1.0, max(0.0, best)), "ok", f"{best:.6f}"))
            position += len(each)
        return verdicts

    def _windows(self, tokenizer: Any, pair: Pair) -> list[str]:
        """Runs of at most `window_sentences` sentences of the passage (one per start, none inside another) that
        fit `max_length` beside the claim; the passage whole when it is short enough on both counts."""
        from ragsweep.chunking.sentence import sentence_bounds

        budget = self.settings["max_length"] - len(tokenizer.tokenize(pair.claim)) - 3
        most = self.window_sentences or 10**9
        sentences = [pair.passage[a:b].strip() for a, b in sentence_bounds(pair.passage) if pair.passage[a:b].strip()]
        if len(sentences) <= most and len(tokenizer.tokenize(pair.passage)) <= budget:
            return [pair.passage]
        lengths = [len(tokenizer.tokenize(sentence)) for sentence in sentences]
        windows, last_end = [], -1
        for first in range(len(sentences)):
            end, used = first + 1, lengths[first]
            while end < len(sentences) and end - first < most and used + lengths[end] <= budget:
                used, end = used + lengths[end], end + 1
            if end > last_end:  # a window inside the previous one adds nothing
                windows.append(" ".join(sentences[first:end]))
                last_end = end
        return windows

