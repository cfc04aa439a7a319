"""Any OpenAI-compatible `/embeddings` endpoint: OpenAI, vLLM, Ollama, Infinity, a llama.cpp server, TEI's OpenAI
route. Vectors are cached per text like every embedder's (`embedding.cached`), so a sweep pays for a passage once."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from tqdm.auto import tqdm

from ragsweep.embedding.base import Role, check_batching, unit_length
from ragsweep.endpoints import check_endpoint, client, error_text


class OpenAIEmbedder:
    """Texts sent `batch_size` to a request, `concurrency` requests in flight at once.

    Args:
        base_url: The endpoint, e.g. http://127.0.0.1:7997 (Infinity) or https://api.openai.com/v1.
        model: Model name the endpoint serves; prices look it up in `prices.models`.
        api_key_env: Name of the environment variable holding the key; null for a server without keys.
        dimensions: Vector size asked of a model that can shorten its vectors (OpenAI's text-embedding-3);
            null sends none.
        query_prefix: Text put before each question (e.g. "query: " for e5 models).
        passage_prefix: Text put before each chunk.
        batch_size: Texts per request.
        concurrency: Requests in flight at once.
        timeout: Seconds one attempt may take.
        max_retries: Retries after a failed attempt (timeouts, connection errors, 429, 5xx), with backoff.
        progress: Show a progress bar while embedding chunks.
    """

    remote = True  # priced by its tokens (`prices.models`), not by this machine's time
    preload = ("openai",)

    def __init__(self, base_url: str, model: str, api_key_env: str | None = None, dimensions: int | None = None,
                 query_prefix: str = "", passage_prefix: str = "", batch_size: int = 64, concurrency: int = 4,
                 timeout: float = 60.0, max_retries: int = 5, progress: bool = True) -> None:
        check_endpoint("embedder", base_url, api_key_env, timeout, max_retries, concurrency)
        check_batching(batch_size, None)
        if not model:
            raise ValueError("embedder.model must name the model the endpoint serves, e.g. embedder.model="
                             "text-embedding-3-small")
        if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, int)
                                       or dimensions < 1):
            raise ValueError(f"embedder.dimensions must be an integer >= 1 or null, got {dimensions!r}")
        self.base_url, self.model, self.model_name = str(base_url), str(model), str(model)
        self.api_key_env, self.dimensions = api_key_env, dimensions
        self.prefixes = {"query": query_prefix, "passage": passage_prefix}
        self.batch_size, self.concurrency = batch_size, concurrency
        self.timeout, self.max_retries, self.progress = timeout, max_retries, progress
        self.tokens = 0  # prompt tokens the endpoint reported using, over this object's requests
        self._counting = threading.Lock()

    def preflight(self) -> None:
        """One text embedded (once per process per endpoint and model), so a wrong base_url, model or key fails
        before any work, naming the setting."""
        if (self.base_url, self.model) in _ANSWERING:
            return
        try:
            self._embed(client(self.base_url, self.api_key_env, self.timeout, 0), ["ragsweep"])
        except Exception as error:  # noqa: BLE001 - any failure of the probe is the endpoint's, said in one line
            raise ValueError(f"embedder.base_url={self.base_url} with embedder.model={self.model} does not embed "
                             f"({error_text(error)}); start the server or fix embedder.base_url and "
                             "embedder.model") from None
        _ANSWERING.add((self.base_url, self.model))

    def encode(self, texts: Sequence[str], role: Role = "passage") -> np.ndarray:
        texts = [self.prefixes[role] + text for text in texts]
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        endpoint = client(self.base_url, self.api_key_env, self.timeout, self.max_retries)
        batches = [texts[start : start + self.batch_size] for start in range(0, len(texts), self.batch_size)]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            answered = pool.map(lambda batch: self._embed(endpoint, batch), batches)
            try:
                parts = list(tqdm(answered, total=len(batches), desc="embedding", unit="batch",
                                  disable=not self.progress or role != "passage" or len(batches) < 2))
            except Exception as error:  # noqa: BLE001 - still failing after the client's retries
                raise RuntimeError(f"embedder.base_url={self.base_url}: embedding failed after "
                                   f"{self.max_retries} retries ({error_text(error)}); what was embedded before is "
                                   "kept in the cache, so a rerun asks only for the rest") from None
        return unit_length(np.vstack(parts))

    def _embed(self, endpoint, texts: list[str]) -> np.ndarray:
        """One request's vectors, in the order of `texts` (the API's `index` orders them)."""
        response = endpoint.embeddings.create(model=self.model, input=texts, encoding_format="float",
                                              **({"dimensions": self.dimensions} if self.dimensions else {}))
        rows = sorted(response.data, key=lambda row: row.index)
        if len(rows) != len(texts):
            raise ValueError(f"the endpoint returned {len(rows)} vectors for {len(texts)} texts")
        if response.usage is not None:
            with self._counting:
                self.tokens += int(response.usage.prompt_tokens or 0)
        return np.asarray([row.embedding for row in rows], dtype=np.float32)


_ANSWERING: set[tuple[str, str]] = set()  # endpoints and models that embedded this process's preflight text
