"""Any `/rerank` endpoint: Cohere's, Jina's, Infinity's and vLLM's (`schema: cohere`) or Text Embeddings
Inference's (`schema: tei`). Rankings are cached like every reranker's (the runner's rerank stage)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from ragsweep.endpoints import check_endpoint, client, error_text
from ragsweep.stores.base import ranked
from ragsweep.types import Chunk, Hit

Schema = Literal["cohere", "tei"]
# Each schema's request body and how its answer lists (index, score) pairs.
SCHEMAS: Mapping[str, str] = {
    "cohere": '{"model", "query", "documents", "top_n"} -> {"results": [{"index", "relevance_score"}]}',
    "tei": '{"query", "texts"} -> [{"index", "score"}]',
}


class EndpointReranker:
    """One request a question, its first `candidates` hits as the documents; `concurrency` requests at once. Each
    request's milliseconds are kept (`request_ms`) as the question's rerank latency, so none is asked twice.

    Args:
        base_url: The server, e.g. http://127.0.0.1:7997 (Infinity), https://api.cohere.com/v2,
            https://api.jina.ai/v1; `/rerank` is added.
        model: Model name the endpoint serves (TEI serves one and ignores it); prices look it up.
        schema: `cohere` (Cohere, Jina, Infinity, vLLM) or `tei` (Text Embeddings Inference).
        api_key_env: Name of the environment variable holding the key; null for a server without keys.
        candidates: First-stage hits re-scored per question (>= k).
        concurrency: Requests in flight at once.
        timeout: Seconds one attempt may take.
        max_retries: Retries after a failed attempt (timeouts, connection errors, 429, 5xx), with backoff.
    """

    remote = True  # priced by its tokens (`prices.models`), not by this machine's time
    preload = ("openai",)

    def __init__(self, base_url: str, model: str, schema: Schema = "cohere", api_key_env: str | None = None,
                 candidates: int = 20, concurrency: int = 4, timeout: float = 60.0, max_retries: int = 5) -> None:
        check_endpoint("reranker", base_url, api_key_env, timeout, max_retries, concurrency)
        if schema not in SCHEMAS:
            raise ValueError(f"reranker.schema={schema} is not one of {', '.join(SCHEMAS)}: cohere for Cohere, Jina, "
                             "Infinity and vLLM, tei for Text Embeddings Inference")
        if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
            raise ValueError(f"reranker.candidates must be an integer >= 1, got {candidates!r}")
        self.base_url, self.model, self.model_name = str(base_url).rstrip("/"), str(model), str(model)
        self.schema, self.api_key_env, self.candidates = schema, api_key_env, candidates
        self.concurrency, self.timeout, self.max_retries = concurrency, timeout, max_retries
        self.request_ms: list[float] = []  # each question's request in the last `rerank`, its latency as served

    def preflight(self) -> None:
        """One small request (once per process per endpoint, model and schema), so a wrong base_url, model, schema or
        key fails before any work, naming the setting."""
        if (self.base_url, self.model, self.schema) in _ANSWERING:
            return
        try:
            self._scores(self._client(0), "ragsweep", ["ragsweep", "sweep"])
        except Exception as error:  # noqa: BLE001 - any failure of the probe is the endpoint's, said in one line
            raise ValueError(f"reranker.base_url={self.base_url} with reranker.model={self.model} and reranker.schema="
                             f"{self.schema} does not rerank ({error_text(error)}); start the server or fix those "
                             "settings") from None
        _ANSWERING.add((self.base_url, self.model, self.schema))

    def rerank(self, questions: Sequence[str], chunks: Sequence[Chunk], hits: Sequence[Sequence[Hit]]) -> list[list[Hit]]:
        endpoint = self._client(self.max_retries)
        self.request_ms = [0.0] * len(questions)

        def one(position: int) -> list[Hit]:
            indices = [hit.index for hit in hits[position]]
            if not indices:
                return []
            started = time.perf_counter()
            scores = self._scores(endpoint, questions[position], [chunks[i].search_text for i in indices])
            self.request_ms[position] = 1000 * (time.perf_counter() - started)
            return ranked(indices, scores)

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            try:
                return list(pool.map(one, range(len(questions))))
            except Exception as error:  # noqa: BLE001 - still failing after the client's retries
                raise RuntimeError(f"reranker.base_url={self.base_url}: reranking failed after {self.max_retries} "
                                   f"retries ({error_text(error)})") from None

    def _scores(self, endpoint: Any, query: str, documents: list[str]) -> list[float]:
        """Each document's score, in the order given."""
        import httpx2

        body = ({"model": self.model, "query": query, "documents": documents, "top_n": len(documents)}
                if self.schema == "cohere" else {"query": query, "texts": documents})
        answer = endpoint.post("/rerank", cast_to=httpx2.Response, body=body).json()
        rows = answer["results"] if self.schema == "cohere" else answer
        key = "relevance_score" if self.schema == "cohere" else "score"
        scores = {int(row["index"]): float(row[key]) for row in rows}
        if sorted(scores) != list(range(len(documents))):
            raise ValueError(f"the endpoint scored {len(scores)} of {len(documents)} documents")
        return [scores[position] for position in range(len(documents))]

    def _client(self, retries: int) -> Any:
        return client(self.base_url, self.api_key_env, self.timeout, retries)


_ANSWERING: set[tuple[str, str, str]] = set()  # endpoints, models and schemas that answered this process's probe
