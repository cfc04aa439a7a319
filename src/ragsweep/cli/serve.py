"""`ragsweep ui | server | sync`: MLflow's UI and a team's tracking server, run and stopped as one process group."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from ragsweep.cli.store import existing_store_uri



def ui_command(args: argparse.Namespace) -> int:
    """Serve MLflow's UI until it exits or this process gets Ctrl-C or SIGTERM, then stop all of it.

    `mlflow ui` is a tree of processes (uvicorn, a job runner, huey consumers). Started in its own
    session, a terminal's Ctrl-C reaches only this process, not each of them (each printed a
    traceback, and the job runner restarted its consumers); this process then stops the whole group.
    """
    from ragsweep.tracking.mlflow_store import VIEW_KEY, ui_experiments

    uri = existing_store_uri(args)
    if not _port_free(args.port):
        print(f"ragsweep: error: port {args.port} is in use; pass --port", file=sys.stderr)
        return 2
    base = f"http://127.0.0.1:{args.port}"
    print(f"MLflow UI for {uri}: {base}  (Ctrl-C stops it)", flush=True)
    for name, experiment_id, shared in ui_experiments(uri):
        view = f"viewStateShareKey={VIEW_KEY}&{RUNS_VIEW}" if shared else RUNS_VIEW
        print(f"  runs of {name}: {base}/#/experiments/{experiment_id}/runs?{view}", flush=True)
    return _serve([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri,
                   "--host", "127.0.0.1", "--port", str(args.port), "--workers", "1"])


RUNS_VIEW = "workflowType=machine_learning"  # MLflow 3 opens an experiment on its GenAI overview without it


def _port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on host:port now (MLflow's own check comes after 20 s of start-up)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a port in TIME_WAIT is free
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def server_command(args: argparse.Namespace) -> int:
    """A team's tracking server: PostgreSQL backend store, artifacts on a shared path (stopped like `ui`)."""
    from ragsweep.tracking.server import ServerError, server_command as command_line

    if not _port_free(args.port, args.host):
        print(f"ragsweep: error: port {args.port} is in use on {args.host}; pass --port", file=sys.stderr)
        return 2
    try:
        command, env = command_line(args.backend_store_uri, args.artifacts_destination, args.host, args.port,
                                    args.workers)
    except ServerError as error:
        print(f"ragsweep: error: {error}", file=sys.stderr)
        return 2
    print(f"MLflow tracking server on http://{args.host}:{args.port} (Ctrl-C stops it); sweeps log to it with "
          f"tracking.uri=http://{args.host}:{args.port}", flush=True)
    return _serve(command, env)


def sync_command(args: argparse.Namespace) -> int:
    """Log the runs a tracking server did not take (their records, `mlflow_run.json`) from job folders."""
    from ragsweep.runner.entry import conf_dirs
    from ragsweep.tracking.options import open_tracker
    from ragsweep.tracking.record import RECORD_FILE, RunRecord
    from ragsweep.tracking.store import full_store

    records = sorted(args.folder.rglob(RECORD_FILE))
    if not records:
        print(f"ragsweep: error: no {RECORD_FILE} under {args.folder}: give a job's output folder "
              "(outputs/multirun/<time>/<n>) or a sweep's", file=sys.stderr)
        return 2
    unlogged = 0
    for path in records:
        record = RunRecord.read(path)
        if not record.unsent:
            print(f"{path.parent}: already logged as run {record.run_id}")
            continue
        tracker = open_tracker(args.tracking, conf_dirs(args.project), uri=args.tracking_uri or record.uri,
                               experiment=record.experiment, artifacts=str(args.project / "mlruns" / "artifacts"))
        try:
            run_id = tracker.sync(path)
        except Exception as error:  # noqa: BLE001  (the store still refuses: say so, keep the record, go on)
            full = full_store(error, tracker.uri)
            if full is not None:  # every next record would fail the same way: `main` says it in one line
                raise full from error
            print(f"{path.parent}: not logged, {tracker.uri} refused it ({error}); the record is kept", file=sys.stderr)
            unlogged += 1
            continue
        print(f"{path.parent}: logged as run {run_id} in {tracker.uri}")
    return 1 if unlogged else 0


def _serve(command: list[str], env: dict[str, str] | None = None) -> int:
    """Run a server until it exits or this process gets Ctrl-C or SIGTERM, then stop its whole process group."""
    signal.signal(signal.SIGTERM, _interrupt)  # `kill <pid>` stops the server too, not only this process
    server = None
    try:
        server = subprocess.Popen(command, start_new_session=True, env=env)
        return server.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if server is not None:
            _stop_group(server)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _stop_group(server: subprocess.Popen, grace_s: float = 5.0) -> None:
    """SIGTERM the server's process group (uvicorn shuts down quietly on it), SIGKILL what outlives `grace_s`."""
    import psutil

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the shutdown short
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        members = _group(server.pid)  # scanned each time: the job runner may have started new consumers
        if not members:
            break
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        psutil.wait_procs(members, timeout=grace_s)
    server.wait()


def _group(pgid: int) -> list:
    """The live (not zombie) processes of a process group."""
    import psutil

    members = []
    for process in psutil.process_iter(["status"]):
        try:
            if os.getpgid(process.pid) == pgid and process.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(process)
        except (ProcessLookupError, psutil.Error):
            continue
    return members


def add_commands(commands: argparse._SubParsersAction) -> None:
    """ui, server and sync."""
    ui = commands.add_parser("ui", help="start the MLflow UI on the project's store (127.0.0.1, one worker)")
    ui.add_argument("--port", type=int, default=5000)
    ui.set_defaults(command=ui_command)
    server = commands.add_parser("server", help="start a team's MLflow tracking server: PostgreSQL store, shared artifacts")
    server.add_argument("--backend-store-uri", required=True, help="postgresql://USER:PASSWORD@HOST:5432/DATABASE")
    server.add_argument("--artifacts-destination", required=True, help="folder on a shared mount (or another MLflow artifact URI) for artifacts")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface; default "
                                                            "127.0.0.1)")
    server.add_argument("--port", type=int, default=5000)
    server.add_argument("--workers", type=int, default=4, help="uvicorn workers (each ~150 MB)")
    server.set_defaults(command=server_command)
    sync = commands.add_parser("sync", help="log job results a tracking server did not take (kept in their folders)")
    sync.add_argument("folder", type=Path, help="a job's output folder, or a sweep's (every job under it)")
    sync.set_defaults(command=sync_command)
