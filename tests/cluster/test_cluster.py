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


@pytest.mark.slow
def test_a_sweep_through_submitit_gives_its_jobs_the_parent_run(tmp_path, scratch_project):
    """`hydra/launcher=submitit_local`: each job is a process submitit starts from a pickled job, as SLURM
    would on another machine (`hydra/launcher=submitit_slurm`); the parent run reaches them in their config."""
    import mlflow

    project = scratch_project(tmp_path / "project")
    swept = subprocess.run([sys.executable, "sweep.py", "-m", "k=1,2", "hydra/launcher=submitit_local",
                            f"paths.root={project}"], cwd=project, capture_output=True, text=True, timeout=600)
    assert swept.returncode == 0, swept.stderr[-3000:]
    mlflow.set_tracking_uri(f"sqlite:///{project}/mlruns/mlflow.db")
    runs = mlflow.search_runs(experiment_names=["ragsweep"])
    parent, children = runs[runs["tags.ragsweep.role"] == "parent"], runs[runs["tags.ragsweep.role"] == "job"]
    assert len(parent) == 1 and parent.status.iloc[0] == "FINISHED"
    assert sorted(children["tags.ragsweep.config_label"]) == ["k=1", "k=2"]  # paths are not part of a name
    assert set(children.status) == {"FINISHED"} and set(children["tags.mlflow.parentRunId"]) == {parent.run_id.iloc[0]}
