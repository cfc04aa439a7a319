"""Ctrl-C and SIGTERM as a user sends them: to a running sweep and to `ragsweep ui`, in real processes.

A terminal's Ctrl-C sends SIGINT to its whole foreground process group, so each sweep here runs in a
session of its own and gets `os.killpg(SIGINT)`; what it records is read back from its sqlite store.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import psutil
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
RAGSWEEP = Path(sys.executable).with_name("ragsweep")  # the installed console script
GRID = ["-m", "retriever=bm25,dense", "k=3,5"]  # 4 jobs: two quick BM25 ones, then dense ones that embed a while
LAUNCHERS = {"basic": [], "joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))}  # entry points set them
    return {**env, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def project(tmp_path, scratch_project) -> Path:
    """A scratch copy of the project: its own MLflow store, stage cache and outputs."""
    return scratch_project(tmp_path / "project")


def _as_from_a_terminal() -> None:
    """Ctrl-C and SIGTERM at their defaults in the started command, as a shell starts it, whatever the test
    process inherited (an ignored signal stays ignored across exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _runs(project: Path) -> pd.DataFrame:
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{project}/mlruns/mlflow.db")
    return mlflow.search_runs(experiment_names=["ragsweep"])


def _jobs(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["tags.ragsweep.role"] == "job"]


def _busy_jobs(project: Path, sweep: subprocess.Popen, quiet_s: float = 3.0) -> set[str]:
    """The RUNNING jobs, once a job has finished and none has for `quiet_s`: jobs that are embedding.

    A job served from the stage cache lasts about a second; waiting out `quiet_s` after the last
    finish leaves only jobs that will run for many seconds more, so the signal lands inside one.
    """
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and sweep.poll() is None:
        time.sleep(0.3)
        if not list((project / "outputs" / "multirun").glob("*/0")):
            continue  # no job started: reading the store while the sweep creates its tables would race with that
        try:
            jobs = _jobs(_runs(project))
        except Exception:  # no job run, no role tag yet
            continue
        finished, running = jobs[jobs.status == "FINISHED"], jobs[jobs.status == "RUNNING"]
        if finished.empty or running.empty:
            continue
        if pd.Timestamp.now(tz="UTC") - finished.end_time.max() >= pd.Timedelta(seconds=quiet_s):
            return set(running.run_id)
    raise AssertionError("the sweep ended, or never had a job running after one finished")


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_ctrl_c_ends_the_sweep_in_one_line_with_runs_killed_and_a_rerun_finishes_the_rest(project, tmp_path, launcher):
    command = [sys.executable, "sweep.py", *GRID, *LAUNCHERS[launcher]]
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("wb") as stderr:
        sweep = subprocess.Popen(command, cwd=project, env=_env(), stdout=subprocess.DEVNULL, stderr=stderr,
                                 start_new_session=True, preexec_fn=_as_from_a_terminal)  # its own group, as a terminal's foreground job
        try:
            busy = _busy_jobs(project, sweep)
            done = set(_jobs(_runs(project)).query("status == 'FINISHED'").run_id)
            progress = stderr_path.stat().st_size  # the jobs' progress bars so far; what follows is the ending
            os.killpg(sweep.pid, signal.SIGINT)  # Ctrl-C
            code = sweep.wait(timeout=120)
        finally:
            if sweep.poll() is None:
                os.killpg(sweep.pid, signal.SIGKILL)
    ending = stderr_path.read_bytes()[progress:].decode(errors="replace")
    assert code == 130, ending
    assert "Traceback" not in ending and "KeyboardInterrupt" not in ending, ending
    lines = [line for line in ending.splitlines() if line.strip()]  # a bar cut short may add one
    assert 1 <= len(lines) <= 3 and lines[-1].startswith("ragsweep: interrupted: "), ending

    runs = _runs(project)
    jobs, parent = _jobs(runs), runs[runs["tags.ragsweep.role"] == "parent"]
    assert not (runs.status == "RUNNING").any()
    killed, finished = jobs[jobs.status == "KILLED"], jobs[jobs.status == "FINISHED"]
    assert busy <= set(killed.run_id)  # the jobs Ctrl-C stopped: KILLED, not FAILED...
    assert set(jobs.status) == {"FINISHED", "KILLED"}
    assert killed["params.k"].notna().all()  # ...with what they had logged kept
    assert done <= set(finished.run_id)  # jobs that had finished stay FINISHED
    assert len(parent) == 1 and parent.status.iloc[0] == "KILLED"
    tags = parent.iloc[0]
    assert (tags["tags.ragsweep.jobs"], tags["tags.ragsweep.failed_jobs"], tags["tags.ragsweep.interrupted_jobs"]) \
        == (str(len(jobs)), "0", str(len(killed)))
    summary = (Path(tags.artifact_uri.removeprefix("file://")) / "summary.md").read_text()
    assert all(run_id in summary for run_id in finished.run_id)  # the ranked table of what finished...
    assert not any(run_id in summary for run_id in killed.run_id)  # ...and of nothing else
    assert str(len(finished)) in lines[-1] and "summary.md" in lines[-1]

    rerun = subprocess.run(command, cwd=project, env=_env(), capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    after = _jobs(_runs(project))
    finished_after = after[after.status == "FINISHED"]
    assert len(finished_after) == 4 and finished_after["tags.ragsweep.config_fingerprint"].is_unique
    assert set(finished.run_id) <= set(finished_after.run_id)  # kept, not run again


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_health(port: int, ui: subprocess.Popen) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + 120
    while ui.poll() is None and time.monotonic() < deadline:
        try:
            with opener.open(f"http://127.0.0.1:{port}/health", timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"`ragsweep ui` did not answer on port {port}")


def _settled_tree(process: psutil.Process, still_s: float = 2.0) -> list[psutil.Process]:
    """The process's descendants once their number has not changed for `still_s` (MLflow starts helpers)."""
    tree, since = process.children(recursive=True), time.monotonic()
    deadline = since + 60
    while time.monotonic() - since < still_s and time.monotonic() < deadline:
        time.sleep(0.5)
        now = process.children(recursive=True)
        if {p.pid for p in now} != {p.pid for p in tree}:
            tree, since = now, time.monotonic()
    return tree


def _alive_in_groups(groups: set[int]) -> list[psutil.Process]:
    alive = []
    for process in psutil.process_iter(["status"]):
        try:
            if os.getpgid(process.pid) in groups and process.info["status"] != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except (ProcessLookupError, psutil.Error):
            continue
    return alive


@contextmanager
def _ui(project: Path, env: dict[str, str]) -> Iterator[tuple[subprocess.Popen, int, Path]]:
    """`ragsweep ui` on a free port, answering, and the file its stderr goes to; afterwards nothing it
    started is left running. (A file, not a pipe: a server that outlives it would hold a pipe open.)"""
    import mlflow

    (project / "mlruns").mkdir(parents=True, exist_ok=True)
    mlflow.MlflowClient(f"sqlite:///{project}/mlruns/mlflow.db").search_experiments()  # ui serves an existing store
    port = _free_port()
    stderr = project / "ui.stderr"
    with stderr.open("w") as out:
        ui = subprocess.Popen([str(RAGSWEEP), "ui", "--port", str(port)], cwd=project, env=env,
                              preexec_fn=_as_from_a_terminal,
                              stdout=subprocess.DEVNULL, stderr=out, start_new_session=True)
    groups = {ui.pid}
    try:
        _wait_for_health(port, ui)
        yield ui, port, stderr
    finally:
        groups |= {os.getpgid(p.pid) for p in _safe_children(ui.pid)}
        for group in groups:  # what a test left running, e.g. the old code's orphaned server
            try:
                os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        ui.wait(timeout=30)


def _safe_children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ragsweep_ui_keeps_telemetry_off_and_stops_its_server_quietly_on_ctrl_c_and_sigterm(tmp_path, signum):
    """The UI asks its server whether to collect telemetry (/ajax-api/3.0/mlflow/ui-telemetry); with telemetry
    on, the server fetches MLflow's remote config to answer (the control test below shows this test would see
    that fetch). Then the signal: the server and every helper it started stop, quietly."""
    with _proxy() as (requests, proxy_port), _ui(tmp_path, _offline_env(proxy_port)) as (ui, port, stderr):
        config, posted = _telemetry(port)
        assert config["disable_ui_telemetry"] is True and posted == {"status": "disabled"}
        tree = _settled_tree(psutil.Process(ui.pid))
        assert requests == []  # nothing left the machine, not even the config request
        assert tree, "the MLflow server runs as a child of `ragsweep ui`"
        groups = {ui.pid} | {os.getpgid(p.pid) for p in tree}
        if signum == signal.SIGINT:
            os.killpg(ui.pid, signum)  # Ctrl-C: to the terminal's foreground group, which `ragsweep ui` leads
        else:
            os.kill(ui.pid, signum)  # `kill <pid>`, as a service manager or a script stops it
        started = time.monotonic()
        ui.wait(timeout=60)
        took = time.monotonic() - started
        survivors = _alive_in_groups(groups)
        assert took < 10, f"`ragsweep ui` took {took:.1f} s to stop"
        assert not survivors, [" ".join(p.cmdline())[:120] for p in survivors]
        assert "Traceback" not in stderr.read_text(), stderr.read_text()[-3000:]
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()


# Variables under which MLflow turns telemetry off by itself (mlflow.telemetry.utils): a server under
# test must not see them, or it would say "disabled" whatever ragsweep does.
CI_MARKERS = ("PYTEST_CURRENT_TEST", "GITHUB_ACTIONS", "CI", "CIRCLECI", "GITLAB_CI", "JENKINS_URL", "TRAVIS",
              "TF_BUILD", "BITBUCKET_BUILD_NUMBER", "CODEBUILD_BUILD_ARN", "BUILDKITE", "TEAMCITY_VERSION",
              "CLOUD_RUN_EXECUTION", "RUNBOT_HOST_URL", "RUNBOT_BUILD_NAME", "RUNBOT_WORKER_ID", "DO_NOT_TRACK")


def _request(url: str, data: bytes | None = None) -> dict:
    """An HTTP request that no proxy variable of this process can divert."""
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=10) as answer:
        return json.load(answer)


@contextmanager
def _proxy() -> Iterator[tuple[list[bytes], int]]:
    """A local proxy that refuses everything and keeps the first bytes of each request (`CONNECT host:443`)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    requests: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(5)
                try:
                    requests.append(connection.recv(200))
                except OSError:
                    requests.append(b"")

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield requests, listener.getsockname()[1]
    finally:
        listener.close()


def _offline_env(proxy_port: int, **extra: str) -> dict[str, str]:
    """No CI markers (MLflow would disable telemetry for them), every outbound request through the proxy."""
    proxy = f"http://127.0.0.1:{proxy_port}"
    env = {k: v for k, v in _env().items() if k not in CI_MARKERS and k.lower() not in (
        "http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    return {**env, "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "NO_PROXY": "127.0.0.1,localhost", **extra}


def _telemetry(port: int) -> tuple[dict, dict]:
    """What the UI's telemetry endpoint answers when asked for its config and when sent a record."""
    api = f"http://127.0.0.1:{port}/ajax-api/3.0/mlflow/ui-telemetry"
    config = _request(api)
    record = {"event_name": "test", "timestamp_ns": 1, "params": {}, "installation_id": "i", "session_id": "s"}
    return config, _request(api, json.dumps({"records": [record]}).encode())


def test_the_telemetry_check_sees_the_config_fetch_of_a_user_who_turns_telemetry_on(tmp_path):
    """The control of the test above: a user who sets MLFLOW_DISABLE_TELEMETRY=false (ragsweep keeps a user's
    value) gets a server that fetches MLflow's remote config, through the proxy the test watches."""
    with _proxy() as (requests, proxy_port), \
            _ui(tmp_path, _offline_env(proxy_port, MLFLOW_DISABLE_TELEMETRY="false")) as (_, port, _):
        _telemetry(port)
        deadline = time.monotonic() + 10
        while not any(r.startswith(b"CONNECT ") for r in requests) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert any(r.startswith(b"CONNECT ") for r in requests), requests


def test_ctrl_c_ends_a_single_run_in_one_line_with_its_run_killed(project):
    run = subprocess.Popen([sys.executable, "sweep.py", "chunker=sentence"], cwd=project, env=_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                           preexec_fn=_as_from_a_terminal)
    deadline = time.monotonic() + 300  # the store is not read before the end: opening it while the job
    while time.monotonic() < deadline and run.poll() is None:  # creates its tables races with that
        time.sleep(0.3)
        if list((project / ".cache" / "ragsweep").glob("chunks/*/*.npz")):
            break  # chunked: the job is embedding now, for several seconds
    time.sleep(2)
    os.killpg(run.pid, signal.SIGINT)
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]
    assert stderr.strip().splitlines()[-1].startswith("ragsweep: interrupted: the run is closed as KILLED")
    assert list(_jobs(_runs(project)).status) == ["KILLED"]
