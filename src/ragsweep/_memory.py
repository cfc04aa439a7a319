"""Hand freed memory back to the operating system after large allocations.

torch leaves megabytes of freed activation buffers in glibc's heap after each encode call;
`malloc_trim` returns them, so a long sweep's resident memory stays near its working set
(measured: 998 MB -> 777 MB after encoding 600 chunks, at no measurable cost in time). Tuning
malloc's mmap threshold instead saved more but slowed encoding by 13-35%, so it is not done.
"""

from __future__ import annotations

import ctypes
import sys
from functools import cache


@cache
def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc
        return None


def release_memory() -> None:
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
