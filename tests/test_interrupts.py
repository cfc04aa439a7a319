"""A Ctrl-C that lands inside a finalizer still stops the job."""

from __future__ import annotations

import os
import signal
import time

import pytest

from ragsweep.interrupts import interrupt


class SignalledWhileCollected:
    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the handler runs here, inside the finalizer
        time.sleep(0.01)


@pytest.fixture
def handler():
    previous = signal.signal(signal.SIGINT, interrupt)
    yield
    signal.signal(signal.SIGINT, previous)


def test_an_interrupt_during_a_finalizer_is_raised_after_it(handler):
    with pytest.raises(KeyboardInterrupt):
        SignalledWhileCollected()  # collected at once; Python would print and drop a KeyboardInterrupt here
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            time.sleep(0.01)


def test_an_interrupt_elsewhere_is_raised_at_once(handler):
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)
