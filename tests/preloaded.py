"""`python sweep.py ARGS` and `ragsweep ARGS` without paying the interpreter's start each time: a server
process imports what they import, once, and forks a child for each command, which runs the command's entry
point (sweep.py's `sweep`, the console script's `main`) in the command's folder with the command's
environment, its output in files, and exits with the entry's code.

A child starts from the server's untouched state (nothing has run in it but the imports), so each command
sees what a fresh process sees, less about 2 s of imports. Used by the tests that run many short refused
commands (tests/test_bad_input.py, tests/cli/test_results.py).

Run as a script it is the server: one JSON request per line on stdin ({"command", "args", "cwd", "env",
"out", "err"}), one line with the exit code back on stdout.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300  # seconds a command may take
PRELOAD = ("hydra", "omegaconf", "mlflow", "ragsweep.cli", "ragsweep.runner.run", "ragsweep.runner.preflight")


class Preloaded:
    """A server forking `sweep.py` and `ragsweep` commands; `run` returns (exit code, stdout, stderr)."""

    def __init__(self, env: dict[str, str]) -> None:
        self._server = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        cwd=ROOT, env=env, text=True)

    def run(self, command: str, args: list[str], cwd: Path, env: dict[str, str], output: Path) -> tuple[int, str, str]:
        """`command` ("sweep.py" or "ragsweep") with `args` in `cwd`; its output goes to files in `output`."""
        out, err = output / "stdout.txt", output / "stderr.txt"
        request = {"command": command, "args": args, "cwd": str(cwd), "env": env, "out": str(out), "err": str(err)}
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

    entries = {"sweep.py": lambda args: sweep(args, ROOT / "conf"), "ragsweep": main}

    for module in PRELOAD:  # what a run imports later anyway; a child finds them loaded
        importlib.import_module(module)

    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, entries[request["command"]])
        print(_wait(pid, TIMEOUT), flush=True)


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
        for stream, path in ((1, request["out"]), (2, request["err"])):
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(handle, stream)
            os.close(handle)
        sys.argv = [str(ROOT / "sweep.py") if request["command"] == "sweep.py" else "ragsweep", *request["args"]]
        code = entry(request["args"]) or 0
    except SystemExit as done:
        if isinstance(done.code, str):
            print(done.code, file=sys.stderr)
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    _serve()
