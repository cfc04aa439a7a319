"""`python sweep.py ARGS` and `ragsweep ARGS` without paying the interpreter's start each time: a server
process imports what they import, once, and forks a child for each command, which runs the command's entry
point (sweep.py's `sweep`, the console script's `main`) in the command's folder with the command's
environment, its output in files, and exits with the entry's code.

A child starts from the server's untouched state (nothing has run in it but the imports), so each command
sees what a fresh process sees, less its imports: about 2 s for a refused command, 5 to 10 s more for a job
that embeds (torch and sentence-transformers). `make test` runs one server per worker (the `preloaded` session
fixture, or `run_command` in place of `subprocess.run`); a command a test signals or reads while it runs is still
started as a new interpreter.

Run as a script it is the server: one JSON request per line on stdin ({"entry", "script", "args", "cwd",
"env", "out", "err", "timeout", "first_path"}), one line with the exit code back on stdout.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300  # seconds a command may take
_shared: Preloaded | None = None
PRELOAD = ("hydra", "omegaconf", "mlflow", "ragsweep.cli", "ragsweep.runner.run", "ragsweep.runner.preflight",
           "torch", "sentence_transformers")  # imported (not run: no thread pool yet) before forking, as workers.py


def shared() -> Preloaded:
    """This test process's server, started on first use with the environment the entry points see when a user
    runs them (their own HF_ and MLFLOW_ defaults, none of the suite's); it ends with the process."""
    global _shared
    if _shared is None:
        _shared = Preloaded({k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MLFLOW_"))})
        atexit.register(_shared.close)
    return _shared


def run_command(argv: Sequence[str], cwd: Path | str, env: Mapping[str, str] | None = None, timeout: float = 900,
                capture_output: bool = True, text: bool = True) -> subprocess.CompletedProcess:
    """`subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)` for a sweep.py or
    ragsweep command, forked by this process's server (`env` None: this process's, as subprocess.run's)."""
    assert capture_output and text, "a forked command's output is captured, as text"
    return shared().completed(argv, Path(cwd), dict(os.environ) if env is None else env, timeout)


class Preloaded:
    """A server forking `sweep.py` and `ragsweep` commands; `run` returns (exit code, stdout, stderr)."""

    def __init__(self, env: dict[str, str]) -> None:
        self._server = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        cwd=ROOT, env=env, text=True)

    def run(self, command: str, args: list[str], cwd: Path, env: dict[str, str], output: Path) -> tuple[int, str, str]:
        """`command` ("sweep.py", the checkout's, or "ragsweep") with `args` in `cwd`; its output goes to files in
        `output`."""
        script = ROOT / "sweep.py" if command == "sweep.py" else None
        return self._request(script, args, cwd, env, output, TIMEOUT,
                             script.parent if script else Path(sys.executable).parent)

    def completed(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str],
                  timeout: float = 900) -> subprocess.CompletedProcess:
        """What `subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)` gives,
        for `[python, some/sweep.py, ...]`, `[python, -m, ragsweep.cli, ...]` or `[.../ragsweep, ...]`."""
        argv = [str(arg) for arg in argv]
        if argv[0] == sys.executable and argv[1].endswith("sweep.py"):
            script, args = (Path(cwd) / argv[1]).resolve(), argv[2:]
            first_path = script.parent  # what `python some/sweep.py` puts first on sys.path, and `-m` the cwd
        elif argv[0] == sys.executable and argv[1:3] == ["-m", "ragsweep.cli"]:
            script, args, first_path = None, argv[3:], Path(cwd)
        elif Path(argv[0]).name == "ragsweep":
            script, args, first_path = None, argv[1:], Path(argv[0]).parent
        else:
            raise ValueError(f"not a sweep.py or ragsweep command: {argv[:3]}")
        with tempfile.TemporaryDirectory(prefix="ragsweep-command-") as output:
            started = time.monotonic()
            code, out, err = self._request(script, args, Path(cwd), dict(env), Path(output), timeout, first_path)
        if code == -signal.SIGKILL and time.monotonic() - started >= timeout:
            raise subprocess.TimeoutExpired(argv, timeout, out, err)
        return subprocess.CompletedProcess(argv, code, out, err)

    def _request(self, script: Path | None, args: list[str], cwd: Path, env: dict[str, str], output: Path,
                 timeout: float, first_path: Path) -> tuple[int, str, str]:
        """`script` (a sweep.py, its conf/ beside it) or, with None, the console script; its exit code and output.
        `first_path` is the folder the command's own interpreter would put first on sys.path."""
        out, err = output / "stdout.txt", output / "stderr.txt"
        request = {"entry": "sweep" if script else "cli", "script": str(script) if script else None, "args": args,
                   "cwd": str(cwd), "env": env, "out": str(out), "err": str(err), "timeout": timeout,
                   "first_path": str(first_path)}
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        code = int(self._server.stdout.readline())
        return code, out.read_text(), err.read_text()

    def close(self) -> None:
        self._server.stdin.close()
        self._server.wait(timeout=60)


def _serve() -> None:
    import ragsweep  # noqa: F401  (what sweep.py imports, in its order)
    from ragsweep.cli import main
    from ragsweep.runner.entry import sweep

    entries = {"sweep": lambda request: sweep(request["args"], Path(request["script"]).parent / "conf"),
               "cli": lambda request: main(request["args"])}

    for module in PRELOAD:  # what a run imports later anyway; a child finds them loaded
        importlib.import_module(module)

    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, entries[request["entry"]])
        print(_wait(pid, request["timeout"]), flush=True)


def _wait(pid: int, timeout: float) -> int:
    """The child's exit code; killed (-9) when it outlives `timeout` seconds, as `subprocess.run(timeout=)` would."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _child(request: dict, entry) -> None:
    from ragsweep import _offline

    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        importlib.reload(_offline)  # its defaults, as `import ragsweep` sets them in a new process
        sys.path[0] = request["first_path"]  # in place of the server's own folder, as the command's interpreter has
        sys.path[1:1] = [entry for entry in request["env"].get("PYTHONPATH", "").split(os.pathsep) if entry]
        for stream, path in ((1, request["out"]), (2, request["err"])):
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(handle, stream)
            os.close(handle)
        sys.argv = [request["script"] or "ragsweep", *request["args"]]
        code = entry(request) or 0
    except SystemExit as done:
        if isinstance(done.code, str):
            print(done.code, file=sys.stderr)
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:  # what an interpreter does as it exits: join its threads (running what they registered to run
            threading._shutdown()  # first), then its atexit functions (ragsweep ends a sweep's parent run there)
            atexit._run_exitfuncs()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)


if __name__ == "__main__":
    _serve()
