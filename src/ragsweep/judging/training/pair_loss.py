"""How the trained support judge fits its cross-encoder to minimal pairs of claims.

`synthetic.make_examples` (and `answer_examples`) give each supported claim an unsupported twin made from
the same sentence. Training keeps the twins in one batch and adds, to the binary cross-entropy of every
claim, a term on the difference of the twins' logits, so the model learns from the one change that
separates them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from tqdm.auto import tqdm

from ragsweep.cores import torch_threads
from ragsweep.judging.training.finetune import optimizer_step, warmup_schedule
from ragsweep.judging.training.synthetic import Example


def fit_pairs(model: Any, tokenizer: Any, examples: list[Example], settings: Mapping[str, Any],
              progress: bool = True, threads: int | None = None) -> list[float]:
    """Binary cross-entropy on every claim plus, for each minimal pair, -log sigmoid(logit_supported -
    logit_unsupported): the pair term learns from the one change that separates them, so a few hundred
    steps suffice (BCE alone was still at chance after 60 steps of 16 on 2 shared cores).

    The word embeddings stay frozen (a few thousand pairs can't improve them; AdamW skips 12M weights);
    the fresh pooler and head learn at 10x the encoder's rate.

    Args:
        model: A sequence-classification model with one logit and a fresh head.
        tokenizer: Its tokenizer.
        examples: Supported and unsupported claims in turn, each pair from one sentence.
        settings: The judge's training settings: seed, epochs, train_batch_size, learning_rate, max_length.
        progress: Show a progress bar.
        threads: torch threads; null takes this process's share of the cores at each step.

    Returns:
        The loss of every step, in order.
    """
    import torch

    s = settings
    model.base_model.embeddings.requires_grad_(False)
    head = [*model.classifier.parameters(), *(model.base_model.pooler.parameters()
                                              if getattr(model.base_model, "pooler", None) else [])]
    fresh = {id(parameter) for parameter in head}
    encoder = [p for p in model.parameters() if p.requires_grad and id(p) not in fresh]
    optimizer = torch.optim.AdamW([{"params": encoder}, {"params": head, "lr": 10 * s["learning_rate"]}],
                                  lr=s["learning_rate"], weight_decay=0.01)
    rng, losses = random.Random(s["seed"]), []
    steps = len(pair_batches(examples, s["train_batch_size"], random.Random(0))) * s["epochs"]
    schedule = warmup_schedule(optimizer, steps)
    model.train()
    with tqdm(total=steps, desc="training judge", unit="step", disable=not progress) as bar:
        for _ in range(s["epochs"]):
            for batch in pair_batches(examples, s["train_batch_size"], rng):
                flat = [example for pair in batch for example in pair]
                inputs = tokenizer([e.passage for e in flat], [e.claim for e in flat], truncation="only_first",
                                   max_length=s["max_length"], padding=True, return_tensors="pt")
                with torch_threads(threads):
                    logits = model(**inputs).logits.squeeze(-1)
                    loss = torch.nn.functional.binary_cross_entropy_with_logits(
                        logits, torch.tensor([float(e.label) for e in flat]))
                    ends = [sum(len(pair) for pair in batch[:i + 1]) for i in range(len(batch))]
                    paired = [end - 2 for end, pair in zip(ends, batch) if len(pair) == 2]
                    if paired:  # make_examples puts the supported claim first in each pair
                        index = torch.tensor(paired)
                        loss = loss + torch.nn.functional.softplus(logits[index + 1] - logits[index]).mean()
                    optimizer_step(model, optimizer, schedule, loss, losses, bar)
    return losses


def pair_batches(examples: list[Example], size: int, rng: random.Random) -> list[list[tuple[Example, ...]]]:
    """Shuffled batches of about `size` examples, each (supported, unsupported) pair kept together, of similar
    length (sorted within pools of 50 batches): less padding, same randomness."""
    pairs = [tuple(examples[i: i + 2]) for i in range(0, len(examples), 2)]
    order = rng.sample(pairs, len(pairs))
    per_batch, pool = max(1, size // 2), max(1, size // 2) * 50
    batches = []
    for start in range(0, len(order), pool):
        ranked = sorted(order[start: start + pool], key=lambda pair: sum(len(e.passage) + len(e.claim) for e in pair))
        batches += [ranked[i: i + per_batch] for i in range(0, len(ranked), per_batch)]
    rng.shuffle(batches)
    return batches
