"""Real services for cluster tests and benchmarks: PostgreSQL, an MLflow server on it, Ray nodes.

Every process is started in its own session and stopped by its pid (then its process group),
never by name: `ray stop` would kill every Ray process on the machine. Ray listens on every
interface, so tests that start Ray nodes run inside a private network namespace (`in_namespace`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")
VENV_BIN = Path(sys.executable).parent


def missing_parts() -> list[str]:
    """What this machine lacks to run the cluster tests (empty when all is there)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (unshare -n, and PostgreSQL run as the postgres user)")
    for tool in ("unshare", "ip", "runuser"):
        if shutil.which(tool) is None:
            missing.append(tool)
    if not (POSTGRES_BIN / "initdb").exists():
        missing.append(f"PostgreSQL 15 ({POSTGRES_BIN})")
    return missing


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(command: list[str], log: Path, cwd: Path | None = None, env: dict | None = None) -> subprocess.Popen:
    """A process in its own session (so its group can be stopped), its output in `log`."""
    with open(log, "ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env, start_new_session=True)


def stop(process: subprocess.Popen, grace_s: float = 20.0) -> None:
    """SIGTERM the process, then whatever is left of its process group; SIGKILL what outlives `grace_s`."""
    members = [process.pid] + [p.pid for p in psutil.process_iter() if _group_of(p.pid) == process.pid]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in members:
            try:
                os.kill(pid, sig)
                alive.append(psutil.Process(pid))
            except (ProcessLookupError, psutil.NoSuchProcess):
                continue
        _, alive = psutil.wait_procs(alive, timeout=grace_s)
        if not alive:
            break
    process.wait(timeout=30)


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def wait_for(check, what: str, timeout_s: float = 90.0, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.25)
    tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    raise TimeoutError(f"{what} not ready after {timeout_s:.0f} s\n{tail}")


class Postgres:
    """A throwaway PostgreSQL 15 cluster on 127.0.0.1 (run as the postgres user; trust auth, no fsync), in a
    folder of its own under the system's temp folder: the postgres user cannot enter root's pytest folders."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="ragsweep-postgres-"))
        shutil.chown(self.folder, "postgres")
        self.data = self.folder / "data"

    def __enter__(self) -> Postgres:
        self._as_postgres("initdb", "-D", self.data, "-A", "trust", "-U", "mlflow", "--no-sync", "-E", "UTF8")
        self._as_postgres("pg_ctl", "-D", self.data, "-l", self.folder / "postgres.log", "-w", "-o",
                          f"-k {self.folder} -h 127.0.0.1 -p {self.port} -c fsync=off -c max_connections=200", "start")
        return self

    def create(self, database: str) -> str:
        """A new database; its SQLAlchemy URI (psycopg)."""
        self._as_postgres("createdb", "-h", "127.0.0.1", "-p", self.port, "-U", "mlflow", database)
        return f"postgresql://mlflow@127.0.0.1:{self.port}/{database}"

    def __exit__(self, *exc) -> None:
        try:
            self._as_postgres("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _as_postgres(self, tool: str, *args) -> None:
        done = subprocess.run(["runuser", "-u", "postgres", "--", str(POSTGRES_BIN / tool), *map(str, args)],
                              capture_output=True, text=True, cwd=self.folder)
        if done.returncode:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")


class MlflowServer:
    """`ragsweep server` on a database: PostgreSQL store, artifacts in `folder/artifacts`."""

    def __init__(self, store_uri: str, folder: Path, port: int | None = None, workers: int = 1) -> None:
        self.store_uri, self.folder, self.port, self.workers = store_uri, folder, port or free_port(), workers
        self.uri = f"http://127.0.0.1:{self.port}"
        self.log = folder / "mlflow-server.log"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> MlflowServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process = start([str(VENV_BIN / "ragsweep"), "server", "--backend-store-uri", self.store_uri,
                              "--artifacts-destination", str(self.folder / "artifacts"), "--port", str(self.port),
                              "--workers", str(self.workers)], self.log)
        wait_for(self.healthy, "MLflow server", 120, self.log)
        return self

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None


class RayNode:
    """`ray start --block`: the head (`address` None) or a worker joining `address`; 1 CPU, small object store."""

    def __init__(self, folder: Path, address: str | None = None, cwd: Path | None = None) -> None:
        self.folder, self.cwd = folder, cwd
        self.head = address is None
        self.port = free_port() if self.head else None
        self.address = f"127.0.0.1:{self.port}" if self.head else address
        self.log = folder / ("ray-head.log" if self.head else f"ray-worker-{time.time_ns()}.log")
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> RayNode:
        self.folder.mkdir(parents=True, exist_ok=True)
        role = ["--head", f"--port={self.port}", "--include-dashboard=false"] if self.head else [f"--address={self.address}"]
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        self.process = start([str(VENV_BIN / "ray"), "start", "--block", *role, "--node-ip-address=127.0.0.1",
                              "--num-cpus=1", "--object-store-memory=100000000", "--disable-usage-stats"],
                             self.log, cwd=self.cwd, env=env)
        return self

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None
