"""A real llama.cpp server (llama-cpp-python's OpenAI-compatible server) on 127.0.0.1, with the
SmolLM2 model the project installs; started and stopped by the tests that need one."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from ragsweep.generation.llama_cpp import packaged_model
from tests.servers import ServerProcess, free_port


class LlamaServer(ServerProcess):
    """llama-cpp-python's server; uvicorn logs each request it answered."""

    name = "llama.cpp server"

    def __init__(self, port: int) -> None:
        super().__init__(port)
        self.base_url = f"http://127.0.0.1:{port}/v1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(packaged_model()), "--host", "127.0.0.1",
                "--port", str(self.port), "--n_threads", "1", "--n_ctx", "2048"]

    def ready_url(self) -> str:
        return f"{self.base_url}/models"

    def answered(self, settle: float = 0.0) -> int:
        """Chat completions the server logged as answered. uvicorn logs a request after sending its
        response, so a client can hold the answer before the line exists: with `settle`, wait (at most
        that many seconds) until the count has not changed for one second."""
        count, since = self._answered(), time.monotonic()
        while time.monotonic() - since < min(1.0, settle):
            time.sleep(0.1)
            if (now := self._answered()) != count:
                count, since = now, time.monotonic()
        return count

    def _answered(self) -> int:
        return sum('"POST /v1/chat/completions HTTP/1.1" 200' in line for line in self.log)


@pytest.fixture
def llama_server():
    """Starts servers on request (`start(port=None)`), stops every one of them afterwards."""
    servers: list[LlamaServer] = []

    def start(port: int | None = None) -> LlamaServer:
        servers.append(LlamaServer(port or free_port()).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def small_dataset(tmp_path) -> Path:
    """A native dataset of three short documents and six questions with reference answers."""
    import json

    folder = tmp_path / "data"
    (folder / "documents").mkdir(parents=True)
    texts = {
        "bridge": "The Harbour Bridge was opened in 1932 by the mayor. It carries eight lanes of traffic.",
        "river": "The river freezes every January. Ferries stop running until the ice melts in March.",
        "library": "The city library holds two million books. It was founded in 1851 by a merchant.",
    }
    for name, text in texts.items():
        (folder / "documents" / f"{name}.txt").write_text(text)
    questions = [("bridge", "When was the Harbour Bridge opened?", "1932"),
                 ("bridge", "How many lanes does the bridge carry?", "eight"),
                 ("river", "When does the river freeze?", "every January"),
                 ("river", "When does the ice melt?", "in March"),
                 ("library", "How many books does the library hold?", "two million"),
                 ("library", "Who founded the library?", "a merchant")]
    with open(folder / "queries.jsonl", "w") as out:
        for number, (doc, question, answer) in enumerate(questions):
            start = texts[doc].index(answer)
            out.write(json.dumps({"id": f"q{number}", "question": question, "answers": [answer],
                                  "references": [{"doc_id": doc, "start": start, "end": start + len(answer)}]}) + "\n")
    return folder
