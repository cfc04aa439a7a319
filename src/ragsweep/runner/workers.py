"""Parallel sweeps fork their workers from one process that has imported the common libraries once.

hydra-joblib-launcher runs jobs in loky workers, and loky starts each worker as a fresh Python
interpreter, which imports Hydra, MLflow, ragsweep and the stores' libraries again before its first
job. With loky's `forkserver` start method, one server process imports them once, while the
launching process is still creating the sweep's MLflow parent run, and each worker is forked from
it ready to work.

The libraries components compute with (torch and sentence-transformers, chromadb, ...) are
preloaded only when the stage cache holds no first-stage results yet, that is when jobs will embed
and index: then two workers would each spend ~5 s of CPU importing torch. A job served from the
cache never loads them, and waiting for a server to import them would only delay it.

Forked workers are not the launching process's children, so nothing stops them when it is killed
(`kill -9`); each one watches it and exits when it is gone.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.forkserver
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from ragsweep.runner.plan import plan_job
from ragsweep.runner.targets import target_class

log = logging.getLogger(__name__)

# joblib caps its loky workers' thread pools through these variables, which loky applies only with
# its own start method; forked workers inherit them from the server instead.
THREAD_LIMITS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                 "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
LAUNCHER_ENV = "RAGSWEEP_LAUNCHER_PID"  # set in the server only: its forked workers watch this process


class PreloadedWorkers(Callback):
    """With hydra/launcher=joblib and more than one worker, forks the workers from a preloaded server.

    The server imports `modules`, the module of every component the sweep's planned jobs build (`PLANNED`) and,
    on a cold stage cache, the libraries those components name in their `preload` class attribute, so a
    sweep without such a component does not wait for its libraries.

    Args:
        modules: Imported by the server in every parallel sweep.
    """

    def __init__(self, modules: list[str]) -> None:
        self.modules = list(modules)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        workers = _joblib_workers(config)
        if workers is None or workers == 1 or "forkserver" not in multiprocessing.get_all_start_methods():
            return
        from joblib.externals.loky.backend import context

        if context.get_start_method() is not None:
            return  # chosen already, by the user or by an earlier sweep in this process
        context.set_start_method("forkserver")
        preload = list(dict.fromkeys([*self.modules, *PLANNED.modules(libraries=_cold(config))]))
        multiprocessing.set_forkserver_preload(["__main__", __name__, *preload])
        threads = str(max(1, (os.cpu_count() or 1) // workers))
        server_env = {**{name: threads for name in THREAD_LIMITS}, LAUNCHER_ENV: str(os.getpid())}
        saved = {name: os.environ.get(name) for name in server_env}
        os.environ.update(server_env)
        try:
            multiprocessing.forkserver.ensure_running()  # the server imports in the background from here on
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        log.info("%d joblib workers fork from a server that preloads %s", workers, ", ".join(preload))


def _exit_with_the_launcher() -> None:
    """In a forked worker: exit once the launching process is gone (pid and start time checked)."""
    try:
        launcher = psutil.Process(int(os.environ[LAUNCHER_ENV]))
    except psutil.NoSuchProcess:
        os._exit(1)

    def watch() -> None:
        while launcher.is_running():
            time.sleep(1)
        os._exit(1)  # like the kill that took the launcher: its runs stay RUNNING until a rerun marks them KILLED

    threading.Thread(target=watch, name="ragsweep-launcher-watch", daemon=True).start()


def _share_progress_bar_lock() -> None:
    """Give tqdm, before any worker is forked, the lock its bars write under, shared by every worker.

    Left to tqdm, each worker creates its own, a named semaphore (workers run under the forkserver
    start method), and a worker that the pool kills when a sweep is interrupted leaves it behind: the
    resource tracker then prints a warning about a leaked semaphore after the sweep's last line. A
    fork-context lock has no name to leave behind, and shared, it keeps two workers' bars apart.
    """
    from tqdm import tqdm

    tqdm.set_lock(multiprocessing.get_context("fork").RLock())


if os.environ.get(LAUNCHER_ENV):  # imported by the fork server, which then forks every worker
    os.register_at_fork(after_in_child=_exit_with_the_launcher)
    _share_progress_bar_lock()


def launcher_workers(config: DictConfig) -> int:
    """How many jobs the sweep's launcher runs at once: joblib's worker count, the CPUs of the Ray cluster over
    each job's (`hydra.launcher.ray.remote.num_cpus`, 1 by default), else 1 (jobs one after another)."""
    joblib_workers = _joblib_workers(config)
    if joblib_workers is not None:
        return joblib_workers
    launcher = config.hydra.launcher
    if not str(launcher.get("_target_", "")).endswith("RayLauncher"):
        return 1
    import ray

    if not ray.is_initialized():  # as the launcher starts Ray, which then finds it started
        settings = OmegaConf.to_container(launcher.ray.init, resolve=True)
        settings.setdefault("object_store_memory", RAY_LAUNCHER_OBJECT_STORE)
        ray.init(**settings)
    per_job = float((launcher.ray.get("remote") or {}).get("num_cpus", 1))
    return max(1, int(ray.cluster_resources().get("CPU", 1) // per_job))


RAY_LAUNCHER_OBJECT_STORE = 78643200  # bytes: hydra-ray-launcher's own default when it starts Ray


def _joblib_workers(config: DictConfig) -> int | None:
    """Worker count of a joblib launcher, as joblib counts its n_jobs, or None for another launcher."""
    import joblib

    launcher = config.hydra.launcher
    if not str(launcher.get("_target_", "")).endswith("JoblibLauncher"):
        return None
    return joblib.effective_n_jobs(int(launcher.n_jobs))  # -1: every core, -2: all but one, ...


def _cold(config: DictConfig) -> bool:
    """True when jobs will compute rather than read: the stage cache is off or has no first-stage results."""
    cache = config.get("cache") or {}
    if not cache.get("enabled", True):
        return True
    results = Path(str(cache.get("dir"))) / "retrieval"
    return not results.is_dir() or not any(results.iterdir())


class PlannedComponents:
    """The components a sweep's jobs build, as the preflight planned each point (`runner.plan`: a retrieval-only job
    builds no judge and reads no answer embedder); the fork server imports their modules."""

    def __init__(self) -> None:
        self.targets: set[str] = set()

    def visit(self, point: list[str], cfg: DictConfig) -> None:
        """Note one point of the sweep (the preflight's `visit`)."""
        self.targets.update(_nested_targets(dict(plan_job(cfg).resolved)))

    def modules(self, libraries: bool) -> list[str]:
        """The planned components' modules, and with `libraries` what they preload."""
        modules: list[str] = []
        for target in sorted(self.targets):
            component = target_class(target)
            if component is None:  # a bad target fails its job, with a clear message, not the preload
                continue
            modules += [component.__module__, *(getattr(component, "preload", ()) if libraries else ())]
        return modules


PLANNED = PlannedComponents()  # filled by `ragsweep.runner.entry.sweep`'s preflight, read as the sweep starts


def _nested_targets(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("_target_"), str):
            yield node["_target_"]
        for value in node.values():
            yield from _nested_targets(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nested_targets(value)
