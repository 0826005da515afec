"""How the C allocator keeps the memory of big batches between them (glibc only).

A batch of row changes passes through buffers of tens of megabytes: the compiled core's columns,
their bytes for Arrow, Arrow's own. glibc serves a block of 128 KiB or more with a fresh ``mmap``
and returns it to the system when it is freed, and it gives back the free top of its heap beyond
a trim threshold. It raises both thresholds as big blocks are freed (the first to at most 32 MiB,
the second to twice that), but while it gets there, every page of every batch's buffers is a new
page fault. ``keep_batch_memory`` starts the process at those limits, so a batch's buffers reuse
the pages of the one before: ``sluice dump --format parquet`` and the Spark tasks that decode
binlog ranges call it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys

__all__ = ["keep_batch_memory"]

_M_TRIM_THRESHOLD = -1  # mallopt's parameters (glibc's malloc.h)
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest dynamic mmap threshold on 64-bit machines
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # what glibc sets beside it


@functools.cache
def keep_batch_memory() -> bool:
    """Set glibc's mmap and trim thresholds to ``MMAP_THRESHOLD`` / ``TRIM_THRESHOLD``, once per
    process; False where the C library is not glibc (nothing is changed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
