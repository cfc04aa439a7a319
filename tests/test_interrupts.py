"""A Ctrl-C that lands inside a finalizer or a weakref callback still stops the job; one that lands while a model
loads stops it once the model has loaded."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from ragsweep.interrupts import interrupt, uninterrupted


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


def test_an_interrupt_while_a_model_loads_is_raised_once_it_has_loaded(handler):
    steps = []

    @uninterrupted
    def load() -> str:
        os.kill(os.getpid(), signal.SIGINT)  # the held-back handler runs here
        time.sleep(0.05)
        steps.append("loaded")
        return "model"

    with pytest.raises(KeyboardInterrupt):
        load()
        steps.append("went on")  # never reached: the interrupt is raised as the load returns
    assert steps == ["loaded"]
    assert signal.getsignal(signal.SIGINT) is interrupt


def test_a_load_without_an_interrupt_returns_its_result_and_keeps_the_handler(handler):
    assert uninterrupted(lambda: 7)() == 7
    assert signal.getsignal(signal.SIGINT) is interrupt
