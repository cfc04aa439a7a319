"""Sweeps on a cluster, with real parts: the scenario in cluster_scenario.py runs in a private
network namespace (only loopback up), because Ray listens on every interface."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.services import missing_parts

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_sweep_on_a_ray_cluster_in_a_private_network_namespace():
    missing = missing_parts()
    if missing:
        pytest.skip(f"the cluster scenario needs {', '.join(missing)}; it did not run here")
    inside = 'ip link set lo up && exec "$0" -m pytest -x -q -p no:cacheprovider tests/cluster/cluster_scenario.py'
    result = subprocess.run(["unshare", "-n", "--", "sh", "-c", inside, sys.executable], cwd=ROOT,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
