"""OpenAI-compatible HTTP endpoints, as every stage that calls one reaches it: generators and judges
(`/chat/completions`), embedders (`/embeddings`) and rerankers (`/rerank`).

The official `openai` client makes the requests, so every stage retries alike: exponential backoff with
jitter on timeouts, connection errors, 408/409/429 and 5xx, honouring a server's `Retry-After`.
"""

from __future__ import annotations

import logging
import os
from typing import Any


def check_endpoint(group: str, base_url: str, api_key_env: str | None, timeout: float, max_retries: int,
                   concurrency: int) -> None:
    """ValueError naming `group`'s key for an endpoint setting that cannot work, before any request."""
    if not str(base_url).startswith(("http://", "https://")):
        raise ValueError(f"{group}.base_url={base_url} must be an http(s) URL, e.g. http://127.0.0.1:8080/v1")
    if not timeout > 0:
        raise ValueError(f"{group}.timeout must be > 0 seconds, got {timeout}")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"{group}.max_retries must be an integer >= 0, got {max_retries}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"{group}.concurrency must be an integer >= 1, got {concurrency}")
    if api_key_env and not os.environ.get(api_key_env):
        raise ValueError(f"{group}.api_key_env={api_key_env} names an environment variable that is not set; "
                         f"export it, or set {group}.api_key_env=null for a server that needs no key")


def client(base_url: str, api_key_env: str | None, timeout: float, max_retries: int) -> Any:
    """An `openai.OpenAI` client for the endpoint (a server without keys is sent a placeholder key)."""
    import openai

    logging.getLogger("httpx2").setLevel(logging.WARNING)  # a line a request drowns a sweep's log
    key = os.environ.get(api_key_env, "") if api_key_env else "no-key"
    return openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries)


def error_text(error: BaseException) -> str:
    """A failed request as a run records it: the error's class and message."""
    return f"{type(error).__name__}: {error}"
