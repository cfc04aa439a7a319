"""Real servers the tests start on 127.0.0.1 and stop afterwards: a llama.cpp server, Infinity."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Sequence


class ServerProcess:
    """One server process started by `command`, up once `ready_url` answers; `log` collects its output lines."""

    name = "server"

    def __init__(self, port: int) -> None:
        self.port = port
        self.log: list[str] = []
        self.process: subprocess.Popen | None = None

    def command(self) -> Sequence[str]:
        raise NotImplementedError

    def ready_url(self) -> str:
        raise NotImplementedError

    def start(self, wait: float = 90) -> ServerProcess:
        self.process = subprocess.Popen(list(self.command()), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, start_new_session=True)
        threading.Thread(target=self._read, args=(self.process,), daemon=True).start()
        deadline = time.monotonic() + wait
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"{self.name} exited:\n" + "".join(self.log[-20:])
            try:
                with opener.open(self.ready_url(), timeout=2):
                    return self
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"{self.name} did not answer within {wait:.0f} s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.log.append(line)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
