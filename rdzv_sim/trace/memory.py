"""Give freed memory back to the system between the stages of a long run's tables.

A run's trace is freed block by block (a round's rows at a time, each under glibc's mmap
threshold) while the events table is built in large new arrays: glibc keeps the freed heap
pages, and Arrow's allocator (mimalloc) the pages of the details it combined and put in time
order, so the process holds both. `malloc_trim` (glibc only; elsewhere a no-op) and Arrow's
`release_unused` return them.
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
    """Return the free pages of the heap and of Arrow's pool to the system."""
    import pyarrow as pa
    pa.default_memory_pool().release_unused()
    trim = _trim()
    if trim is not None:
        trim(0)
