"""This machine's cores, shared among every ragsweep process working on it (any folder, clone or user).

A model run with `threads: null` (an embedder, a reranker, a judge, llama.cpp, torch generation or training) asks
`CoreShare.threads()` before each slice of its work (`model_threads`, `torch_threads`). Each working process keeps
a marker file named by its pid in one folder every user can write (`ragsweep-cores` in the system's temporary
folder), saying whether it runs a threaded model now or does single-threaded work (a job's loading, chunking,
indexing, scoring). The share is the cores the single-threaded processes leave, split evenly among the threaded
ones. Without it, two sweeps each gave llama.cpp every core: its threads wait for each other at every step, so
each answered 8-15 times slower than alone.

Markers of dead processes, and of an earlier process whose pid was reused, are ignored and removed.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from ragsweep.interrupts import uninterrupted

log = logging.getLogger(__name__)

THREADED = "threaded"  # runs a model on as many threads as its share
WORKING = "working"  # in a job, on one core (Python between the model calls)
FOLDER = "ragsweep-cores"
SHARED_MODE = 0o1777

_HELD: dict[tuple[int, Path], list[str]] = {}  # (pid, folder) -> kinds this process holds now, innermost last


class CoreShare:
    """The cores this process may use now, and its own marker among the machine's ragsweep processes."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or Path(tempfile.gettempdir()) / FOLDER

    @contextmanager
    def threaded(self) -> Iterator[None]:
        """While a model runs on this process's share of the cores."""
        with self._holding(THREADED):
            yield

    @contextmanager
    def working(self) -> Iterator[None]:
        """While a job runs: one core taken, whatever the stage."""
        with self._holding(WORKING):
            yield

    def threads(self) -> int:
        """(cores - processes working on one core) // processes running threaded models, at least 1; this
        process counts as what its marker says (nothing, when it holds none)."""
        threaded = working = 0
        for marker in self._markers():
            kind = _live_kind(marker)
            threaded += kind == THREADED
            working += kind == WORKING
        cores = os.cpu_count() or 1
        return max(1, (cores - working) // max(1, threaded))

    @contextmanager
    def _holding(self, kind: str) -> Iterator[None]:
        key = (os.getpid(), self.folder)
        held = _HELD.setdefault(key, [])
        held.append(kind)
        self._mark(held)
        try:
            yield
        finally:
            held.pop()
            self._mark(held)
            if not held:
                del _HELD[key]

    def _mark(self, held: list[str]) -> None:
        """Write (or remove, holding nothing) this process's marker: its kind and its start time, which tells it
        from a later process given the same pid. A folder this user cannot write leaves the process unmarked."""
        marker = self.folder / str(os.getpid())
        try:
            if not held:
                marker.unlink(missing_ok=True)
                return
            _shared_folder(self.folder)
            kind = THREADED if THREADED in held else WORKING
            written = self.folder / f".{os.getpid()}.tmp"
            written.write_text(f"{kind} {psutil.Process().create_time()!r}")
            os.replace(written, marker)
        except OSError as error:
            log.debug("cannot mark this process in %s (%s); its share is not counted by others", self.folder, error)

    def _markers(self) -> list[Path]:
        try:
            return [marker for marker in self.folder.iterdir() if marker.name.isdigit()]
        except OSError:
            return []


@contextmanager
def model_threads(threads: int | None, share: CoreShare | None = None) -> Iterator[int]:
    """The threads a model may run on for one slice of its work (a few batches, a training step): `threads` when
    set, else this process's share of the cores now. The process counts as running a model until the block ends;
    entering it for each slice lets the share follow the processes that start and stop meanwhile."""
    share = share or CoreShare()
    with share.threaded():
        yield threads or share.threads()


@contextmanager
def torch_threads(threads: int | None, share: CoreShare | None = None) -> Iterator[int]:
    """`model_threads` given to torch's intra-op pool for the block."""
    torch = _torch()
    with model_threads(threads, share) as count:
        if torch.get_num_threads() != count:
            torch.set_num_threads(count)
        yield count


@uninterrupted
def _torch() -> Any:
    import torch

    return torch


def _shared_folder(folder: Path) -> None:
    """Make the marker folder writable by every user and sticky (each removes only their own), as /tmp is; a
    folder this user owns with another mode is given that one."""
    folder.mkdir(parents=True, exist_ok=True)
    status = folder.stat()
    if status.st_uid == os.getuid() and stat.S_IMODE(status.st_mode) != SHARED_MODE:
        folder.chmod(SHARED_MODE)


def _live_kind(marker: Path) -> str | None:
    """The kind a live process's marker says (an unreadable or empty marker counts as threaded), None for a
    marker left by a dead process, which is removed when this user may."""
    pid = int(marker.name)
    try:
        kind, _, started = marker.read_text().partition(" ")
    except OSError:
        return None
    try:
        alive = psutil.Process(pid)
        if started and abs(alive.create_time() - float(started)) > 0.01:
            raise psutil.NoSuchProcess(pid)  # the pid was given to a later process
    except psutil.NoSuchProcess:
        try:
            marker.unlink(missing_ok=True)
        except OSError:
            pass  # another user's marker
        return None
    except (psutil.AccessDenied, ValueError):
        pass
    return kind if kind in (THREADED, WORKING) else THREADED
