"""The process behind each run, so that runs whose process or node is gone do not stay RUNNING forever.

A run that raises or is stopped closes itself; one whose process is killed (`kill -9`) or whose Ray node
dies cannot. Every run is tagged with its host, pid, process start time and Ray node, so a later job or
sweep can tell which RUNNING runs lost their process and mark them KILLED, with the reason as a tag.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from typing import TYPE_CHECKING

import psutil

if TYPE_CHECKING:
    from ragsweep.tracking.mlflow_tracker import MlflowTracker

log = logging.getLogger(__name__)

LOST_TAG = "ragsweep.lost"  # on a run marked KILLED because its process or node is gone


def process_tags() -> dict[str, str]:
    """Where this run's process lives: host, pid and start time, and its Ray node when a Ray job."""
    process = psutil.Process()
    tags = {"ragsweep.host": socket.gethostname(), "ragsweep.pid": str(process.pid),
            "ragsweep.started": repr(process.create_time())}
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        tags["ragsweep.ray_node"] = ray.get_runtime_context().get_node_id()
        tags["ragsweep.ray_node_ip"] = ray.util.get_node_ip_address()
    return tags


def alive(tags: dict[str, str]) -> bool | None:
    """Whether the process that tagged a run still runs: False when known gone (its Ray node is dead, or
    its pid on this host has exited or been reused), True when known running, None when it cannot be told."""
    node = tags.get("ragsweep.ray_node")
    ray = sys.modules.get("ray")
    if node and ray is not None and ray.is_initialized():
        nodes = {entry["NodeID"]: entry["Alive"] for entry in ray.nodes()}
        if not nodes.get(node, False):
            return False
    pid, started = tags.get("ragsweep.pid"), tags.get("ragsweep.started")
    if not pid or not started or tags.get("ragsweep.host") != socket.gethostname():
        return None  # not ours to judge
    try:
        return repr(psutil.Process(int(pid)).create_time()) == started
    except (psutil.NoSuchProcess, ValueError):
        return False


def mark_lost(tracker: MlflowTracker, run_id: str, why: str) -> None:
    """Close a run as KILLED, saying why in its LOST_TAG."""
    client = tracker.client()
    client.set_tag(run_id, LOST_TAG, why)
    client.set_terminated(run_id, "KILLED")


def kill_running_children(tracker: MlflowTracker, parent_run_id: str, wait_s: float = 10.0) -> list[str]:
    """Mark KILLED the parent's RUNNING child runs once their processes have exited (at most `wait_s`).

    For a sweep that ended or stopped: every job has returned, or was stopped, so a run still
    RUNNING lost its process (Ctrl-C stopped a parallel worker before it closed its run) or its
    node. Waiting first keeps a job that is still closing its run from overwriting the status.
    """
    client = tracker.client()
    running = client.search_runs(
        [tracker.experiment_id()],
        f"tags.mlflow.parentRunId = '{parent_run_id}' and attributes.status = 'RUNNING'", max_results=10_000)
    deadline = time.monotonic() + wait_s
    killed = []
    for run in running:
        tags = run.data.tags
        while tags.get("ragsweep.pid") != str(os.getpid()) and time.monotonic() < deadline \
                and alive(tags) is not False:
            time.sleep(0.1)
        if client.get_run(run.info.run_id).info.status == "RUNNING":
            why = "still RUNNING when its sweep ended: its process or node was lost"
            mark_lost(tracker, run.info.run_id, why)
            killed.append(run.info.run_id)
    return killed


def kill_orphans(tracker: MlflowTracker) -> list[str]:
    """Mark KILLED the RUNNING runs that nothing will close: those whose process is known to be gone
    (this host's pids, a dead Ray node), and the jobs of sweeps that have ended."""
    client = tracker.client()
    running = client.search_runs([tracker.experiment_id()], "attributes.status = 'RUNNING'", max_results=10_000)
    orphans = [run.info.run_id for run in running if alive(run.data.tags) is False]
    open_parents = {run.info.run_id for run in running if run.info.run_id not in orphans}
    for run in running:
        parent = run.data.tags.get("mlflow.parentRunId")
        if run.info.run_id not in orphans and parent and parent not in open_parents:
            orphans.append(run.info.run_id)
    for run_id in orphans:
        mark_lost(tracker, run_id, "RUNNING when a later sweep started, with its process, node or sweep gone")
    if orphans:
        log.warning("marked %d run(s) KILLED: their processes are gone (%s)", len(orphans), ", ".join(orphans))
    return orphans
