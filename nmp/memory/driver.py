"""``replay(trace_or_requests, spec) -> MemStats``: lower requests to the engine and back
(check the lines, run on the backend :func:`engine_backend` picks, collect statistics). The C
engine takes the lines and decodes them itself; the numba engine takes their transactions
decoded to node ids (:func:`nmp.memory.lines.lines_inputs`). numba loads only where the numba
engine runs: the C engine's path (``nmp replay`` where a compiler is found) starts without it."""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nmp.errors import NmpError, TraceError
from nmp.memory import native
from nmp.memory.counters import (
    C_COAL,
    C_CONF_R,
    C_CONF_W,
    C_FWD,
    C_HIT_R,
    C_HIT_W,
    C_MISS_R,
    C_MISS_W,
)
from nmp.memory.lines import NO_WRITE, check_lines, checked_inputs, native_lines
from nmp.memory.plan import plan_of as _plan
from nmp.memory.spec import MemorySpec
from nmp.memory.standards import COMMANDS
from nmp.memory.stats import MemStats, command_energy_pj
from nmp.memory.trace import REQUEST_DTYPE, read_trace

_NO_LOG = np.full((0, 5), -1, np.int64)
ENGINES = ("auto", "native", "numba")
# Progress hooks: called with the transactions of each engine run as it finishes (a design
# point replays many streams; a command's progress display counts them). Empty: no cost.
_ON_REPLAY: list[Callable[[int], None]] = []


@contextlib.contextmanager
def on_replay(callback: Callable[[int], None]) -> Iterator[None]:
    """Call ``callback(transactions)`` after every engine run inside the block (this process
    only: a sweep's pool workers have their own)."""
    _ON_REPLAY.append(callback)
    try:
        yield
    finally:
        _ON_REPLAY.remove(callback)


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
            return max(1, int(env))
        except ValueError:
            raise NmpError(f"NMP_ENGINE_THREADS={env!r}: expected a count of threads") from None
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


@functools.cache
def _warn_unsupported(why: str) -> None:
    warnings.warn(
        f"the native DRAM engine does not take {why}; this replay runs on the numba engine: "
        "same results, several times slower",
        RuntimeWarning,
        stacklevel=4,
    )


def run_engine(
    lines: tuple,
    spec: MemorySpec,
    *,
    drain: bool = True,
    jump: bool = True,
    log_size: int = 0,
    scratch: bool = False,
):
    """The engine's 11-tuple (see :func:`nmp.memory.engine.simulate`; with ``log_size`` the
    command log of channel 0 appended) for ``lines`` = (addresses, writes: an array or one bool,
    arrival cycles or None), on the backend :func:`engine_backend` picks. The C engine decodes
    the lines itself; the numba engine takes them decoded
    (:func:`nmp.memory.lines.lines_inputs`)."""
    checked = check_lines(lines[0], spec, lines[1], lines[2])
    return _run(checked, spec, drain=drain, jump=jump, log_size=log_size, scratch=scratch)


def _run(
    checked: tuple, spec: MemorySpec, *, drain: bool, jump: bool, log_size: int, scratch: bool
):
    """:func:`run_engine` of lines already checked (:func:`nmp.memory.lines.check_lines`)."""
    addr, wr_in, _, arrival = checked
    plan = _plan(spec)
    params = plan.engine_params(drain, jump)
    log = np.full((log_size, 5), -1, np.int64) if log_size else _NO_LOG
    native_ok = engine_backend() == "native"
    if native_ok and plan.native_unsupported:
        _warn_unsupported(plan.native_unsupported)
        native_ok = False
    if native_ok:
        wr_in, arrival = native_lines(addr, wr_in, arrival, scratch)
        threads = engine_threads(spec.org.channels, len(addr) * plan.k)
        out = native.simulate(
            addr, wr_in, arrival, plan.native_decode, params, *plan.tables, log, threads
        )
    else:
        from nmp.memory import engine  # here: numba loads only for the numba engine

        inputs = checked_inputs(checked, spec, scratch=scratch)
        out = engine.simulate(*inputs, params, *plan.tables, log)
    for callback in _ON_REPLAY:
        callback(len(out[7]))  # the transactions (done cycles) of this run
    return (*out, log) if log_size else out


def _counts(cnt) -> dict[str, int]:
    d = dict(zip(COMMANDS, map(int, cnt[: len(COMMANDS)]), strict=True))
    return {
        "ACT": d["ACT"],
        "PRE": d["PREpb"] + d["PREab"],
        "PREpb": d["PREpb"],
        "PREab": d["PREab"],
        "RD": d["RD"] + d["RDA"],
        "WR": d["WR"] + d["WRA"],
        "REF": d["REFab"],
    }


def _as_requests(trace_or_requests) -> np.ndarray:
    if isinstance(trace_or_requests, str | os.PathLike | Path):
        return read_trace(trace_or_requests)
    arr = np.asarray(trace_or_requests)
    if arr.dtype.names is None or not {"addr", "write"} <= set(arr.dtype.names):
        raise TraceError(f"requests must be a structured array with fields {REQUEST_DTYPE.names}")
    return arr


def _read_sums(wr_in, ks: int, arrive, depart, done, cycles: int) -> tuple[int, ...]:
    """The read statistics of a run (:func:`nmp.memory.engine.read_sums`), in C where the C
    engine is built (no numba import)."""
    if native.available():
        return native.read_sums(wr_in, ks, arrive, depart, done, cycles)
    from nmp.memory import engine  # here: numba loads only where the C engine is not built

    write = NO_WRITE if wr_in is None else wr_in
    sums = engine.read_sums(write, wr_in is not None, ks, arrive, depart, done, cycles)
    return tuple(int(v) for v in sums)


def replay(
    trace_or_requests, spec: MemorySpec, *, drain: bool = True, timeline: bool = False
) -> MemStats:
    """Replay a trace file or a request array on ``spec`` and return its statistics.

    Requests may carry an ``arrival`` field (memory cycle, non-decreasing): a request is not
    offered before it. ``timeline=True`` keeps per-transaction ``arrive`` (accepted) and
    ``done`` (data returned / write issued) cycles in ``stats.timeline``.

    ``drain=True`` (default) runs until every request has completed: the counts, latency,
    bandwidth and energy then cover the whole work, ``cycles_drained`` is its length and
    ``at_cycles`` holds the counts at Ramulator's end point ``cycles``. ``drain=False`` stops
    at ``cycles``: every figure is then Ramulator's.
    """
    requests = _as_requests(trace_or_requests)
    names = requests.dtype.names or ()
    arrival = requests["arrival"] if "arrival" in names else None
    return _replay_lines(
        (requests["addr"], requests["write"], arrival), spec, drain=drain, timeline=timeline
    )


def replay_lines(
    addr: np.ndarray,
    spec: MemorySpec,
    write: np.ndarray | bool = False,
    *,
    drain: bool = True,
    timeline: bool = False,
) -> MemStats:
    """:func:`replay` of plain line addresses (uint64) and writes, with no request array: what
    ``replay(make_requests(addr, write), spec)`` returns."""
    return _replay_lines((addr, write, None), spec, drain=drain, timeline=timeline)


def _replay_lines(lines: tuple, spec: MemorySpec, *, drain: bool, timeline: bool) -> MemStats:
    checked = check_lines(lines[0], spec, lines[1], lines[2])
    # the engine inputs live only through this call: this thread's scratch buffers rather
    # than fresh arrays on every replay
    status, cycles, clk_end, snap, final, arrive, depart, done, fwd, active, _ = _run(
        checked, spec, drain=drain, jump=True, log_size=0, scratch=True
    )
    if status != 0:
        raise NmpError(f"the controller deadlocked at cycle {clk_end} (no command can ever issue)")
    n = len(done)
    cycles = int(cycles)
    addr, wr_in = checked[0], checked[1]
    ks = int(_plan(spec).native_decode[0])
    reads, at_sum, served, served_sum, last_done = _read_sums(
        wr_in, ks, arrive, depart, done, cycles
    )
    snap, final = snap.tolist(), final.tolist()  # Python ints
    # Ramulator's avg_read_latency at `cycles`: reads whose data returned by then (forwarded
    # ones with latency 1), over the RD commands issued by then.
    snap_counts = _counts(snap)
    at_cycles: dict[str, Any] = {
        "cmd_counts": snap_counts,
        "row_hits": int(snap[C_HIT_R] + snap[C_HIT_W]),
        "row_misses": int(snap[C_MISS_R] + snap[C_MISS_W]),
        "row_conflicts": int(snap[C_CONF_R] + snap[C_CONF_W]),
        "avg_read_latency_cycles": at_sum / snap_counts["RD"] if snap_counts["RD"] else 0.0,
    }
    cnt = final if drain else snap
    counts = _counts(cnt)
    if drain:
        # the exact integer sum over the count: numpy's mean of these integers (its float64
        # partial sums are exact below 2^53 cycles)
        avg_lat = float(served_sum) / served if served else 0.0
    else:
        avg_lat = at_cycles["avg_read_latency_cycles"]
    drained_cycles = max(last_done, cycles) if drain else cycles
    active_sum = int(active.sum())
    energy = command_energy_pj(spec, counts, drained_cycles, float(active_sum))
    t_ns = cycles * spec.tck_ns
    t_dr = drained_cycles * spec.tck_ns
    moved = (counts["RD"] + counts["WR"]) * spec.org.tx_bytes
    bw = moved / t_dr if t_dr > 0 else 0.0
    return MemStats(
        memory=spec.name,
        cycles=cycles,
        cycles_drained=drained_cycles,
        t_ns=t_ns,
        t_drained_ns=t_dr,
        lines=len(addr),
        requests=n,
        reads=reads,
        writes=n - reads,
        cmd_counts=counts,
        row_hits=int(cnt[C_HIT_R] + cnt[C_HIT_W]),
        row_misses=int(cnt[C_MISS_R] + cnt[C_MISS_W]),
        row_conflicts=int(cnt[C_CONF_R] + cnt[C_CONF_W]),
        read_row_hits=int(cnt[C_HIT_R]),
        read_row_misses=int(cnt[C_MISS_R]),
        read_row_conflicts=int(cnt[C_CONF_R]),
        write_row_hits=int(cnt[C_HIT_W]),
        write_row_misses=int(cnt[C_MISS_W]),
        write_row_conflicts=int(cnt[C_CONF_W]),
        reads_forwarded=int(cnt[C_FWD]),
        writes_coalesced=int(cnt[C_COAL]),
        avg_read_latency_cycles=avg_lat,
        bandwidth_gbps=bw,
        bandwidth_utilization=bw / spec.peak_bandwidth_gbps if spec.peak_bandwidth_gbps else 0.0,
        energy_pj=float(sum(energy.values())),
        energy_breakdown_pj=energy,
        at_cycles=at_cycles,
        active_cycles=active_sum,
        timeline={"arrive": arrive, "done": done} if timeline else None,
    )
