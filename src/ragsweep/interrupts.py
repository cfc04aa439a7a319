"""Ctrl-C that always stops the job, even when it lands inside a finalizer."""

from __future__ import annotations

import os
import threading
from types import FrameType


def interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGINT handler: raise KeyboardInterrupt where the main thread is, as Python's own handler does.

    Python prints and ignores an exception raised in a finalizer (`__del__`, e.g. a regex object
    collected mid-embedding), so a Ctrl-C landing there was lost and the job ran on to its end.
    There the signal is delivered again a moment later, outside the finalizer.
    """
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
            return
        frame = frame.f_back
    raise KeyboardInterrupt
