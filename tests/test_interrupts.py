"""A Ctrl-C that lands inside a finalizer or a weakref callback still stops the job."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from ragsweep.interrupts import interrupt


class SignalledWhileCollected:
    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the handler runs here, inside the finalizer
        time.sleep(0.01)


@pytest.fixture
def handler():
    previous, hook = signal.signal(signal.SIGINT, interrupt), sys.unraisablehook
    yield
    signal.signal(signal.SIGINT, previous)
    sys.unraisablehook = hook


def test_an_interrupt_during_a_finalizer_is_raised_after_it(handler):
    with pytest.raises(KeyboardInterrupt):
        SignalledWhileCollected()  # collected at once; Python would print and drop a KeyboardInterrupt here
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            time.sleep(0.01)


class SignalledInAWeakrefCallback:
    """Collected at once, so its weakref's callback runs (as SQLAlchemy's do for its collected event collections)."""


def test_an_interrupt_during_a_weakref_callback_is_raised_after_it(handler):
    import weakref

    def callback(_):
        os.kill(os.getpid(), signal.SIGINT)  # the handler runs here, inside the callback
        time.sleep(0.01)

    with pytest.raises(KeyboardInterrupt):
        reference = weakref.ref(SignalledInAWeakrefCallback(), callback)  # noqa: F841  (collected at once)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            time.sleep(0.01)


def test_an_interrupt_elsewhere_is_raised_at_once(handler):
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)
