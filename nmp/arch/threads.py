"""The threads of one design point: a batch's DRAM replays (one per node) run side by side, and
the functional gather-reduce beside them.

The C DRAM engine and the compiled gather kernels release the GIL, and every piece is a pure
function of its inputs (work buffers are per thread), so results are the same with any number
of threads; only the wall time changes. ``$NMP_THREADS`` sets the count (1: everything in the
calling thread, in order); by default every CPU this process may use. ``nmp evaluate``'s worker
processes run with one thread each: there the processes use the cores.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from nmp.errors import NmpError

THREADS_ENV = "NMP_THREADS"

_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0


def point_threads() -> int:
    """Threads a design point may use: ``$NMP_THREADS``, else every CPU this process may use."""
    text = os.environ.get(THREADS_ENV, "").strip()
    if text:
        try:
            n = int(text)
        except ValueError:
            n = 0
        if n < 1:
            raise NmpError(f"{THREADS_ENV} must be a whole number >= 1, got '{text}'")
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _pool(size: int) -> ThreadPoolExecutor:
    global _POOL, _POOL_SIZE
    with _LOCK:
        if _POOL is None or size != _POOL_SIZE:
            if _POOL is not None:
                _POOL.shutdown(wait=False)
            _POOL = ThreadPoolExecutor(max_workers=size, thread_name_prefix="nmp-point")
            _POOL_SIZE = size
        return _POOL


def _forget_pool() -> None:
    """In a forked child: the parent's pool threads do not exist there."""
    global _POOL, _POOL_SIZE, _LOCK
    _LOCK = threading.Lock()
    _POOL, _POOL_SIZE = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


class Pending:
    """Calls started on the point's threads; :meth:`results` waits for all of them."""

    def __init__(self, futures: list[Future] | None = None, values: list | None = None) -> None:
        self._futures = futures
        self._values = values

    def results(self) -> list:
        """The calls' results in the order they were given. Every call has finished when this
        returns or raises (the first error in that order), so nothing still reads their
        inputs."""
        if self._futures is None:
            return list(self._values or [])
        errors = [f.exception() for f in self._futures]  # waits for each
        for exc in errors:
            if exc is not None:
                raise exc
        return [f.result() for f in self._futures]


def start(calls: Sequence[tuple[Callable[..., Any], tuple]]) -> Pending:
    """Start ``fn(*args)`` for each (fn, args): on the pool with more than one thread, else
    here and now, one after another."""
    threads = point_threads()
    if threads <= 1 or not calls:
        return Pending(values=[fn(*args) for fn, args in calls])
    pool = _pool(threads)
    return Pending(futures=[pool.submit(fn, *args) for fn, args in calls])


__all__ = ["THREADS_ENV", "Pending", "point_threads", "start"]
