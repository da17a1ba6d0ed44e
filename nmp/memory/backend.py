"""Which engine a replay runs on (``$NMP_ENGINE``: the C engine where it can be built, else
the numba engine) and on how many threads (``$NMP_ENGINE_THREADS``), without numpy: both the
driver (:mod:`nmp.memory.driver`) and ``nmp replay``'s path without numpy
(:mod:`nmp.memory.text_replay`) ask."""

from __future__ import annotations

import functools
import os
import warnings

from nmp.errors import NmpError
from nmp.memory import native_lib as native

ENGINES = ("auto", "native", "numba")


def engine_backend() -> str:
    """Which build of the engine replays run on: ``$NMP_ENGINE``, one of ``auto`` (the default:
    ``native`` when it can be built, else ``numba``), ``native`` (C, :mod:`nmp.memory.native`)
    or ``numba`` (:mod:`nmp.memory.engine`, the reference). Both give the same results."""
    choice = os.environ.get("NMP_ENGINE", "auto").strip().lower() or "auto"
    if choice not in ENGINES:
        raise NmpError(f"NMP_ENGINE={choice!r}: expected one of {', '.join(ENGINES)}")
    if choice == "numba" or native.available():
        return "numba" if choice == "numba" else "native"
    if choice == "native":
        raise NmpError(f"NMP_ENGINE=native: {native.unavailable_reason()}")
    _warn_fallback()
    return "numba"


# A replay below this many transactions keeps its channels on one thread: starting threads
# and handing requests between them would cost more than they save. Chosen, not tuned (no
# idle multi-core machine to tune on; see benchmarks/dram_replay.py --threads).
_THREADS_MIN_TX = 1 << 16


def engine_threads(channels: int, transactions: int) -> int:
    """On how many threads the C engine runs the channels of a replay (same results on any
    number): ``$NMP_ENGINE_THREADS`` where set (a count; 1: never more than one); else, for a
    replay of several channels and at least 65,536 transactions, as many as the machine has
    cores to spare (its cores less its load average, so that a sweep's processes, or other
    users, are not crowded out), up to one per channel; else 1."""
    env = os.environ.get("NMP_ENGINE_THREADS", "").strip()
    if env:
        try:
            count = int(env)
        except ValueError:
            count = 0
        if count < 1:  # (-1 ran on one thread, silently)
            raise NmpError(f"NMP_ENGINE_THREADS={env!r}: expected a count of threads >= 1")
        return count
    if channels < 2 or transactions < _THREADS_MIN_TX:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return max(1, min(channels, int((cores or 1) - load)))


@functools.cache
def _warn_fallback() -> None:
    warnings.warn(
        f"the native DRAM engine is not available ({native.unavailable_reason()}); replays run "
        "on the numba engine: same results, several times slower",
        RuntimeWarning,
        stacklevel=3,
    )
