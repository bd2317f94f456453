"""Give freed memory back to the system between the stages of a long run's tables.

A run's trace is freed block by block (a round's rows at a time, each under glibc's mmap
threshold) while the events table is built in large new arrays: glibc keeps the freed heap
pages, so the process holds both. `malloc_trim` returns them (glibc only; elsewhere a no-op).
"""
from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache


@lru_cache(maxsize=1)
def _trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


def give_back() -> None:
    """Return the heap's free pages to the system (glibc's malloc_trim(0))."""
    trim = _trim()
    if trim is not None:
        trim(0)
