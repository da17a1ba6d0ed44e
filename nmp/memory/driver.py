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

import numpy as np

from nmp.errors import NmpError, TraceError
from nmp.memory import native
from nmp.memory.backend import (  # (apart, without numpy: nmp replay's path)
    ENGINES as ENGINES,
)
from nmp.memory.backend import (
    _warn_fallback as _warn_fallback,
)
from nmp.memory.backend import (
    engine_backend,
    engine_threads,
)
from nmp.memory.lines import NO_WRITE, check_lines, checked_inputs, native_lines
from nmp.memory.plan import plan_of as _plan
from nmp.memory.spec import MemorySpec
from nmp.memory.stats import MemStats, run_stats
from nmp.memory.trace import REQUEST_DTYPE, read_trace

_NO_LOG = np.full((0, 5), -1, np.int64)
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
    checked: tuple,
    spec: MemorySpec,
    *,
    drain: bool,
    jump: bool,
    log_size: int,
    scratch: bool,
    scratch_out: bool = False,
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
            addr, wr_in, arrival, plan.native_decode, params, *plan.tables, log, threads,
            scratch=scratch_out,
        )  # fmt: skip
    else:
        from nmp.memory import engine  # here: numba loads only for the numba engine

        inputs = checked_inputs(checked, spec, scratch=scratch)
        out = engine.simulate(*inputs, params, *plan.tables, log)
    for callback in _ON_REPLAY:
        callback(len(out[7]))  # the transactions (done cycles) of this run
    return (*out, log) if log_size else out


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
    # a run that is only summed reads the records' fields in one C pass into this thread's
    # buffers (the engine's inputs, not kept), with the reductions the checks take
    split = None if timeline or not _summary_path(spec) else native.split_requests(requests)
    if split is not None:
        addr, write, (top, writes, any_bits, all_bits) = split
        lines = (addr, write if writes else False, arrival)
        return _replay_lines(
            lines, spec, drain=drain, timeline=False, bounds=(top, any_bits, all_bits)
        )
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


def replay_lines_many(streams: list[np.ndarray], spec: MemorySpec) -> list[MemStats]:
    """``[replay_lines(addr, spec) for addr in streams]`` (reads, drained, no timeline): where
    the C engine runs them one channel thread each, in one call
    (:func:`nmp.memory.native.simulate_summaries`), without the Python of a call per run."""
    plan = _plan(spec)
    if not _summary_path(spec):
        return [replay_lines(addr, spec) for addr in streams]
    # each stream's largest address, OR and AND in one C pass, for its check and narrowing
    # (numpy's three reductions took 0.4 ms of a design point's 18 streams)
    checked, bounds = [], []
    for addr in streams:
        addr = np.ascontiguousarray(addr, dtype=np.uint64)
        b = native.line_bounds(addr)
        assert b is not None  # (the summary path runs only where the library is built)
        checked.append(check_lines(addr, spec, False, None, addr_max=b[0])[0])
        bounds.append(b[1:])
    if not all(engine_threads(spec.org.channels, len(a) * plan.k) == 1 for a in checked):
        return [replay_lines(addr, spec) for addr in checked]
    runs = [
        (addr, *plan.narrowed(addr, True, bits)) for addr, bits in zip(checked, bounds, strict=True)
    ]
    summaries = native.simulate_summaries(runs, int(plan.native_decode[0]), *plan.tables)
    out = []
    for addr, summary in zip(checked, summaries, strict=True):
        for callback in _ON_REPLAY:
            callback(len(addr) * plan.k)
        out.append(_summary_stats(spec, summary, drain=True, lines=len(addr)))
    return out


def _replay_lines(
    lines: tuple,
    spec: MemorySpec,
    *,
    drain: bool,
    timeline: bool,
    bounds: tuple[int, int, int] | None = None,
) -> MemStats:
    """:func:`replay_lines`; ``bounds``: the lines' largest address, OR and AND, where known."""
    top, bits = (None, None) if bounds is None else (bounds[0], bounds[1:])
    checked = check_lines(lines[0], spec, lines[1], lines[2], addr_max=top)
    summary = None if timeline else _run_summary(checked, spec, drain, bits)
    if summary is not None:
        return _summary_stats(spec, summary, drain=drain, lines=len(checked[0]))
    # the engine inputs live only through this call, and so do its per-transaction outputs
    # unless the timeline keeps them: this thread's scratch buffers rather than fresh arrays
    # on every replay
    status, cycles, clk_end, snap, final, arrive, depart, done, fwd, active, _ = _run(
        checked, spec, drain=drain, jump=True, log_size=0, scratch=True, scratch_out=not timeline
    )
    ks = int(_plan(spec).native_decode[0])
    sums = _read_sums(checked[1], ks, arrive, depart, done, int(cycles))
    timeline_arrays = {"arrive": arrive, "done": done} if timeline else None
    run = (status, cycles, clk_end, snap.tolist(), final.tolist(), int(active.sum()), sums)
    return _summary_stats(spec, run, drain=drain, lines=len(checked[0]), timeline=timeline_arrays)


def _summary_stats(
    spec: MemorySpec, summary: tuple, *, drain: bool, lines: int, timeline: dict | None = None
) -> MemStats:
    """A run's MemStats from its summary (status, cycles, the engine's end clock, the counter
    snapshot and final counts, the active cycles, the read sums); a deadlocked run an error."""
    status, cycles, clk_end, snap_list, final_list, active_sum, sums = summary
    if status != 0:
        raise NmpError(f"the controller deadlocked at cycle {clk_end} (no command can ever issue)")
    return run_stats(
        spec,
        drain=drain,
        cycles=int(cycles),
        snap=snap_list,
        final=final_list,
        sums=sums,
        active_sum=active_sum,
        lines=lines,
        timeline=timeline,
    )


def _summary_path(spec: MemorySpec) -> bool:
    """Whether a replay on ``spec`` without a timeline is summed by the C engine
    (:func:`_run_summary`)."""
    return engine_backend() == "native" and not _plan(spec).native_unsupported


def _run_summary(
    checked: tuple, spec: MemorySpec, drain: bool, bits: tuple | None = None
) -> tuple | None:
    """The C engine's run of lines already checked, summed without a timeline
    (:func:`nmp.memory.native.simulate_summary`), or None where the numba engine runs them.
    ``bits``: the lines' OR and AND, where known."""
    plan = _plan(spec)
    if not _summary_path(spec):
        return None
    addr, wr_in, _, arrival = checked
    write, arrival = native_lines(addr, wr_in, arrival, True)
    threads = engine_threads(spec.org.channels, len(addr) * plan.k)
    # (on fewer bank groups or banks where the lines lie in fewer: the same run, narrower)
    decode, params = plan.narrowed(addr, drain, bits)
    out = native.simulate_summary(
        addr, write, arrival, int(decode[0]), decode, params, *plan.tables, threads,
        has_write=wr_in is not None,
    )  # fmt: skip
    for callback in _ON_REPLAY:
        callback(len(addr) * plan.k)  # the transactions of this run
    return out
