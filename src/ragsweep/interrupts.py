"""Ctrl-C that always stops the job, even when it lands inside a finalizer, a weakref callback or a model's loading."""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

_hook_before: Callable[[Any], None] = sys.__unraisablehook__  # the unraisable hook `interrupt` replaced


def interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGINT handler: raise KeyboardInterrupt where the main thread is, as Python's own handler does.

    Python prints and ignores an exception raised where nothing can catch it (a finalizer, a weakref or garbage
    collector callback: a regex object or a SQLAlchemy event collection collected mid-job), so a Ctrl-C landing
    there was lost and the job ran on to its end. `sys.unraisablehook` sees it: the signal is delivered again a
    moment later, outside.
    """
    global _hook_before
    if sys.unraisablehook is not _deliver_again:
        _hook_before, sys.unraisablehook = sys.unraisablehook, _deliver_again
    raise KeyboardInterrupt


def _deliver_again(unraisable: Any) -> None:
    """`sys.unraisablehook`: a KeyboardInterrupt nothing could catch is sent to this process again; anything
    else goes to the hook before."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
        return
    _hook_before(unraisable)


def uninterrupted(load: Callable[..., T]) -> Callable[..., T]:
    """Run `load` (a model library's import and a model's loading: seconds) with Ctrl-C held back, delivered once
    it returns. A KeyboardInterrupt raised inside torch's import, where its C++ calls back into Python, can end
    the process with SIGABRT and a dump instead of the job's one line and its run closed KILLED."""

    @functools.wraps(load)
    def held(*args: Any, **kwargs: Any) -> T:
        if threading.current_thread() is not threading.main_thread():
            return load(*args, **kwargs)
        before = signal.getsignal(signal.SIGINT)
        if not callable(before):  # ignored or default: nothing of Python's runs on Ctrl-C
            return load(*args, **kwargs)
        caught: list[int] = []
        signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
        try:
            return load(*args, **kwargs)
        finally:
            signal.signal(signal.SIGINT, before)
            if caught:
                signal.raise_signal(signal.SIGINT)

    return held
