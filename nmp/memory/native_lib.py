"""The C DRAM engine's library loaded through ctypes (:mod:`nmp.memory.native_build` builds
it), with no numpy: its entry points, whether it is there, and a call that Ctrl-C can stop.
:mod:`nmp.memory.native` wraps it for numpy arrays; :mod:`nmp.memory.text_replay` calls it on
plain buffers (``nmp replay``'s start-up without numpy: issue 43)."""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from types import SimpleNamespace

from nmp.memory.counters import N_COUNTERS
from nmp.memory.engine_fields import EngineArgs, ParamsStruct
from nmp.memory.native_build import _SOURCE, compiler
from nmp.memory.native_load import load_all
from nmp.memory.standards import NCMD

_ERRORS = {
    -1: "out of memory",
    -2: "a constraint window above 4, or more than 64 windowed rules",
    -3: "a decoding with a shift outside a word or a field beyond the organization",
    -4: "too many requests for the row width: a request's index and row exceed 55 bits",
    -5: "more than 64 banks or 8 ranks per channel",
    -6: "a windowed timing rule below the rank",
}
_P = ctypes.c_void_p
_I = ctypes.c_int64
_SYMBOLS = (
    "simulate_c",
    "read_sums_c",
    "parse_trace_c",
    "parse_lines_c",
    "struct_size_c",
    "simulate_many_c",
    "split_requests_c",
    "simulate_sum_c",
    "line_bounds_c",
)


@functools.lru_cache(maxsize=1)
def _library():
    """(the library's entry points, None) or (None, why it could not be built)."""
    if NCMD != 9 or N_COUNTERS != 18:  # engine.c's fixed layout
        return None, f"engine.c is written for 9 commands and 18 counters ({NCMD}, {N_COUNTERS})"
    try:
        entries = load_all(_SYMBOLS, on_build=_build_status)
    except Exception as e:
        import subprocess  # (only where the build failed: a built library needs none)

        if isinstance(e, subprocess.CalledProcessError):
            last = (e.stderr or "").strip().splitlines()
            return None, f"{' '.join(e.cmd[:1])} failed: {last[-1] if last else e.returncode}"
        if isinstance(e, OSError | subprocess.SubprocessError):
            return None, f"cannot build {_SOURCE.name}: {e}"
        raise
    (simulate_c, read_sums_c, parse_trace_c, parse_lines_c, struct_size_c, simulate_many_c,
     split_requests_c, simulate_sum_c, line_bounds_c) = entries  # fmt: skip
    struct_size_c.restype = _I
    struct_size_c.argtypes = [_I]
    sizes = (struct_size_c(0), struct_size_c(1))
    mine = (ctypes.sizeof(ParamsStruct), ctypes.sizeof(EngineArgs))
    if sizes != mine:
        return None, (
            f"engine.c's Params and Args ({sizes[0]}, {sizes[1]} bytes) differ from "
            f"ParamsStruct and EngineArgs ({mine[0]}, {mine[1]})"
        )
    simulate_c.restype = ctypes.c_int
    simulate_c.argtypes = [ctypes.POINTER(EngineArgs)]
    simulate_sum_c.restype = ctypes.c_int
    simulate_sum_c.argtypes = [ctypes.POINTER(EngineArgs), _P]
    simulate_many_c.restype = ctypes.c_int
    simulate_many_c.argtypes = [_P, _I, _I, _P]
    read_sums_c.restype = None
    read_sums_c.argtypes = [_P, _I, _P, _P, _P, _I, _I, _P]
    parse_trace_c.restype = ctypes.c_int64
    parse_trace_c.argtypes = [ctypes.c_char_p, _I, _P, _I]
    parse_lines_c.restype = ctypes.c_int64
    parse_lines_c.argtypes = [ctypes.c_char_p, _I, _P, _P, _I, _P]
    split_requests_c.restype = None
    split_requests_c.argtypes = [_P, _I, _I, _I, _I, _P, _P, _P]
    line_bounds_c.restype = None
    line_bounds_c.argtypes = [_P, _I, _P]
    lib = SimpleNamespace(
        simulate_c=simulate_c,
        read_sums_c=read_sums_c,
        parse_trace_c=parse_trace_c,
        parse_lines_c=parse_lines_c,
        simulate_many_c=simulate_many_c,
        simulate_sum_c=simulate_sum_c,
        split_requests_c=split_requests_c,
        line_bounds_c=line_bounds_c,
    )
    return lib, None


def _build_status():
    """A status line on stderr while the library compiles (only on a terminal: logs and pipes
    stay clean)."""
    import contextlib

    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(
        f"building the C DRAM engine with {' '.join(compiler())} (once per machine and "
        "compiler; about 20 s; `make` / `pip install` build it ahead)"
    )


def available() -> bool:
    """Whether the native engine is built (or can be, now)."""
    return _library()[0] is not None


def unavailable_reason() -> str | None:
    return _library()[1]


def unsupported_rules(
    ranks: int, bankgroups: int, banks: int, tab_i: list[int], win: list[int]
) -> str | None:
    """Why the C engine does not take an organization of ``ranks`` x ``bankgroups`` x ``banks``
    per channel with the constraint table ``tab_i`` (flat, of shape (5, 4, NCMD) as
    :func:`nmp.memory.native.simulate` takes it) and windows ``win``, or None. The driver then
    runs the numba engine."""
    per_channel = ranks * bankgroups * banks
    if per_channel > 64 or ranks > 8:
        return f"{per_channel} banks in {ranks} ranks per channel (it takes up to 64 and 8)"
    block = 4 * NCMD  # one of tab_i's five tables (start, end, ...): levels x commands
    for level in (2, 3):  # bank group, bank: the target rules
        row = level * NCMD
        starts, ends = tab_i[row : row + NCMD], tab_i[block + row : block + row + NCMD]
        for s, e in zip(starts, ends, strict=True):
            if any(w > 1 for w in win[s:e]):
                return "a windowed timing rule below the rank"
    return None


# A run of at least this many transactions runs in a thread of its own, which the main thread
# waits for, so that Ctrl-C stops the command (a signal reaches Python only between its own
# steps, never while the main thread is inside a C call). Chosen: 2^18 transactions, a run of
# tens of milliseconds and more, where the thread's start (about 0.1 ms) is noise.
INTERRUPTIBLE_TRANSACTIONS = 2**18


def run_work(n: int, arrival) -> int:
    """A run's size for :func:`_interruptible`: its ``n`` transactions, plus one per 4096
    cycles before its last arrival, where the engine still issues refreshes (a trace of two
    lines 1e11 cycles apart runs for seconds)."""
    return n + (int(arrival[-1]) >> 12 if len(arrival) else 0)


def _interruptible(n: int, alive: object, fn, *args):
    """``fn(*args)`` (a C function that releases the GIL), in a daemon thread where ``n`` is
    large and this is the main thread; Ctrl-C raises KeyboardInterrupt here at once, and the
    C call, which cannot be stopped, ends with the process. ``alive`` (the arrays the call
    reads and writes) stays referenced by the thread until the call returns."""
    if n < INTERRUPTIBLE_TRANSACTIONS or threading.current_thread() is not threading.main_thread():
        return fn(*args)
    result: list = []

    def call(keep=alive) -> None:
        try:
            result.append(fn(*args))
        except BaseException as exc:  # raised again in the caller's thread
            result.append(exc)

    worker = threading.Thread(target=call, name="nmp-dram-engine", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.1)  # KeyboardInterrupt is raised here, between two waits
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]
