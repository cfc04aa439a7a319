"""The process behind each run, so that runs whose process or node is gone do not stay RUNNING forever.

A run that raises or is stopped closes itself; one whose process is killed (`kill -9`) or whose Ray node
dies cannot. Every run is tagged with its host, pid, process start time and Ray node, so a later job or
sweep can tell which RUNNING runs lost their process and mark them KILLED, with the reason as a tag
(`tracking.mlflow_lookups`).
"""

from __future__ import annotations

import socket
import sys
import psutil


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
