"""Whether other processes are using the cores a run is about to use, said once per process.

A run on a machine whose cores another program keeps busy takes several times as long as the docs'
figures (two llama.cpp servers on 2 cores answered 8-15 times slower each); a user who sees no reason
for that suspects ragsweep. The cores busy elsewhere are measured from every process's CPU time over a
short window, leaving out this process's group (the sweep's own launcher and joblib workers).
"""

from __future__ import annotations

import logging
import os
import time

import psutil

log = logging.getLogger(__name__)

WINDOW_S = 0.5  # how long the other processes' CPU time is measured
BUSY_CORES = 0.5  # cores busy elsewhere from which a run says so

_said = False


def cores_busy_elsewhere(window_s: float = WINDOW_S) -> float:
    """Cores the processes outside this process's group kept busy over `window_s` seconds."""
    before = _cpu_seconds_elsewhere()
    time.sleep(window_s)
    after = _cpu_seconds_elsewhere()
    return sum(max(0.0, after[pid] - seconds) for pid, seconds in before.items() if pid in after) / window_s


def _cpu_seconds_elsewhere() -> dict[int, float]:
    ours = os.getpgid(0)
    seconds = {}
    for process in psutil.process_iter(["cpu_times"]):
        try:
            if os.getpgid(process.pid) != ours and process.info["cpu_times"] is not None:
                seconds[process.pid] = process.info["cpu_times"].user + process.info["cpu_times"].system
        except (psutil.Error, ProcessLookupError):
            continue
    return seconds


def say_if_cores_are_taken() -> float | None:
    """Once per process: warn when other processes keep at least `BUSY_CORES` cores busy, with the slowdown
    that leaves at the least (all cores wanted, shared with them); the cores measured busy, or None after the
    first call."""
    global _said
    if _said:
        return None
    _said = True
    busy = cores_busy_elsewhere()
    cores = os.cpu_count() or 1
    if busy >= BUSY_CORES:
        log.warning("other processes kept %.1f of this machine's %d cores busy just now (measured over %.1f s): "
                    "every stage will take at least %.1fx as long as on an idle machine (logged as this run's "
                    "cores_busy_elsewhere)", busy, cores, WINDOW_S, (busy + cores) / cores)
    return busy
