"""Any OpenAI-compatible chat-completions endpoint: vLLM, Ollama, a llama.cpp server, TGI or OpenAI.

Retries are the official `openai` client's own (`ragsweep.endpoints`); a question that still fails is returned
with its error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from ragsweep.endpoints import check_endpoint, client, error_text
from ragsweep.generation.base import JSON, Generation, Request, check_positive

log = logging.getLogger(__name__)


class OpenAIGenerator:
    """Chat completions at temperature 0 with a fixed seed, `concurrency` requests in flight at once.

    Args:
        base_url: The endpoint, e.g. http://127.0.0.1:8080/v1.
        model: Model name the endpoint serves.
        api_key_env: Name of the environment variable holding the key; null for a server without keys.
        timeout: Seconds one attempt may take.
        max_retries: Retries after a failed attempt (timeouts, connection errors, 429, 5xx).
        concurrency: Requests in flight at once (a llama.cpp server serves one at a time; vLLM many).
        max_tokens: Most tokens generated per answer.
        temperature: 0 is greedy decoding.
        seed: Sampling seed, sent to servers that honour it.
    """

    enabled = True
    remote = True  # priced by its tokens (`prices.models`), not by this machine's time
    preload = ("openai",)
    gives = (JSON,)  # a request's response_format, sent on (`constrained: false` where an endpoint rejects it)

    def __init__(self, base_url: str, model: str, api_key_env: str | None = None, timeout: float = 60.0,
                 max_retries: int = 3, concurrency: int = 1, max_tokens: int = 128, temperature: float = 0.0,
                 seed: int = 0) -> None:
        check_endpoint("generator", base_url, api_key_env, timeout, max_retries, concurrency)
        check_positive(max_tokens, "max_tokens")
        check_positive(seed, "seed", allow_zero=True)
        self.base_url, self.model, self.model_name = str(base_url), model, str(model)
        self.api_key_env, self.timeout, self.max_retries = api_key_env, timeout, max_retries
        self.concurrency, self.max_tokens, self.temperature, self.seed = concurrency, max_tokens, temperature, seed

    def preflight(self) -> None:
        """One request to the endpoint's model list (once per process), so a wrong base_url or a server
        that is not up fails before any work, with the fix."""
        if self.base_url in _ANSWERING:
            return
        import openai

        try:
            self._client(retries=0).models.list()
        except openai.APIError as error:
            raise ValueError(f"generator.base_url={self.base_url} does not answer ({type(error).__name__}: {error}); "
                             "start the server or fix generator.base_url") from None
        _ANSWERING.add(self.base_url)

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        client = self._client(self.max_retries)
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(lambda request: self._answer(client, request), requests))

    def _answer(self, client, request: Request) -> Generation:
        import openai

        started = time.perf_counter()
        try:
            completion = client.chat.completions.create(
                model=self.model, messages=list(request.messages), temperature=self.temperature,
                max_tokens=self.max_tokens, seed=self.seed,
                **({"response_format": request.response_format} if request.response_format else {}))
        except openai.APIError as error:  # still failing after the client's retries
            log.warning("generation failed after %d retries: %s", self.max_retries, error)
            return Generation(None, 1000 * (time.perf_counter() - started),
                              error=error_text(error))
        milliseconds = 1000 * (time.perf_counter() - started)
        usage = completion.usage
        return Generation((completion.choices[0].message.content or "").strip(), milliseconds,
                          usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0)

    def _client(self, retries: int):
        return client(self.base_url, self.api_key_env, self.timeout, retries)


_ANSWERING: set[str] = set()  # endpoints that answered this process's preflight
