"""A real CrossEncoder folder for tests: no trained cross-encoder can be installed here, so MiniLM's encoder gets a
seeded, untrained scoring head. The plumbing (loading by path, scoring pairs, reordering, serving) is real; the
scores carry no meaning."""

from __future__ import annotations

from pathlib import Path


def build_cross_encoder(folder: Path) -> str:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from ragsweep.embedding.minilm import minilm_path

    torch.manual_seed(0)
    AutoModelForSequenceClassification.from_pretrained(minilm_path(), num_labels=1).save_pretrained(folder)
    AutoTokenizer.from_pretrained(minilm_path()).save_pretrained(folder)
    return str(folder)
