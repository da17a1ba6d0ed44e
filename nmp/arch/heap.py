"""Freed work arrays kept by the C allocator between design points (glibc only).

A design point allocates a few dozen arrays of its batch's size (hundreds of KiB each: the
flattened lookups, the placement, the issue orders, the compiled passes' outputs) and frees
them at its end. glibc's malloc serves such sizes with fresh mappings or returns them from the
top of its heap once it holds more free memory than its trim threshold (both thresholds move
with what was last freed), so the next point maps the same amount again and touches every page
afresh: on ``recross-eval`` about 570 page faults and 1.5 ms of system time per point (of about
45 ms). Fixing both thresholds keeps the pages: arrays below :data:`MMAP_THRESHOLD_BYTES` come
from the heap, and up to :data:`TRIM_THRESHOLD_BYTES` of free memory stays mapped there.

This changes no result, only where memory comes from; a process that set either threshold
itself (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``) keeps its own, and another C
library (musl, macOS) is left alone.
"""

from __future__ import annotations

import ctypes
import os

# glibc's own bound of its moving threshold (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit): chosen, so
# that larger arrays (a Criteo-size table) are still mapped and unmapped on their own
MMAP_THRESHOLD_BYTES = 32 << 20
# chosen: twice the mapping threshold, as glibc's own rule sets it when the threshold moves
TRIM_THRESHOLD_BYTES = 64 << 20

_M_TRIM_THRESHOLD = -1  # glibc's malloc.h
_M_MMAP_THRESHOLD = -3
_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")

_done = False


def keep_freed_memory() -> bool:
    """Fix glibc's mapping and trim thresholds (once per process); whether they were set."""
    global _done
    if _done:
        return False
    _done = True
    if any(name in os.environ for name in _ENV):
        return False
    try:
        libc = ctypes.CDLL(None)  # the interpreter's own symbols: its C library's among them
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018 (glibc's alone: its option numbers are these)
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    return mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1 and ok


__all__ = ["MMAP_THRESHOLD_BYTES", "TRIM_THRESHOLD_BYTES", "keep_freed_memory"]
