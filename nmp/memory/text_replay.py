"""``nmp replay``'s path without numpy (issue 43: numpy's import was most of a replay's CPU
time): a trace in the canonical Ramulator form (every line ``LD|ST 0x<hex>``) read by the C
engine's own parser (``parse_lines_c``, engine_trace.h) into plain ctypes buffers, replayed by
the C engine (``simulate_sum_c``, which sums its read statistics as requests retire) and its
:class:`~nmp.memory.stats.MemStats` built from plain values by
:func:`nmp.memory.stats.run_stats`, as the driver builds them: the same figures as
:func:`nmp.memory.driver.replay` of the same trace (tests/memory/test_text_replay.py).

Where anything else applies (another trace form, the numba engine chosen or the C engine not
built, a spec the C engine does not take, an address beyond the capacity, an engine error or
a deadlock) :func:`replay_text` returns None, and the caller takes the general path, which
names what is wrong. The replay hooks of :func:`nmp.memory.driver.on_replay` are not called
here (``nmp replay`` registers none)."""

from __future__ import annotations

import ctypes

from nmp.memory import engine_args
from nmp.memory.backend import engine_backend, engine_threads
from nmp.memory.counters import N_COUNTERS
from nmp.memory.engine_fields import EngineArgs, ParamsStruct
from nmp.memory.native_lib import _interruptible, _library
from nmp.memory.spec import MemorySpec
from nmp.memory.stats import MemStats, run_stats

_I64 = ctypes.c_int64


def _lines(data: bytes, spec: MemorySpec, lib) -> tuple | None:
    """(addresses, writes, count) of a canonical text, in ctypes buffers; None for any other
    text or one with an address beyond ``spec``'s capacity."""
    cap = data.count(b"\n") + 1  # the lines, the last one perhaps without its newline
    addr = (ctypes.c_uint64 * cap)()
    wr = (ctypes.c_uint8 * cap)()
    info = (ctypes.c_uint64 * 2)()  # the largest address, the writes
    n = lib.parse_lines_c(data, len(data), addr, wr, cap, info)
    if n < 0:
        return None
    # the last transaction of the highest line within the capacity (check_lines' check)
    o = spec.org
    if info[0] + (spec.requests_per_line - 1) * o.tx_bytes >= spec.capacity_bytes:
        return None
    return addr, wr, n


def replay_text(data: bytes, spec: MemorySpec, *, drain: bool = True) -> MemStats | None:
    """The statistics of the trace text ``data`` replayed on ``spec`` by the C engine with no
    numpy, as :func:`nmp.memory.driver.replay` gives them; None where this path does not
    apply (see the module docstring)."""
    if engine_backend() != "native" or engine_args.native_unsupported(spec):
        return None
    lib, _ = _library()
    lines = _lines(data, spec, lib)
    if lines is None:
        return None
    addr, wr, n = lines
    decode = engine_args.native_decode(spec)
    ks = decode[0]
    tx = n << ks
    params = ParamsStruct(**engine_args.param_values(spec, drain, True))
    table = engine_args.tables(spec)
    dec_c, tab_c, nxt_c, lat_c, win_c = (
        (_I64 * len(v))(*v) for v in (decode, table.tab_i, table.nxt, table.lat, table.win)
    )
    arrival = (_I64 * max(n, 1))()  # zeros: a Ramulator trace has no arrival cycles
    log = (_I64 * 5)()  # no command log (0 rows)
    scalars = (_I64 * 4)()
    snap, final = (_I64 * N_COUNTERS)(), (_I64 * N_COUNTERS)()
    arrive, depart, done = (_I64 * tx)(), (_I64 * tx)(), (_I64 * tx)()
    forwarded = (ctypes.c_uint8 * tx)()
    active = (_I64 * (spec.org.channels * spec.org.ranks))()
    arrays = (addr, wr, arrival, dec_c, params, tab_c, nxt_c, lat_c, win_c, log)
    outputs = (scalars, snap, final, arrive, depart, done, active, forwarded)
    addr_of = ctypes.addressof
    args = EngineArgs(
        addr_of(addr), addr_of(wr), addr_of(arrival), tx, addr_of(dec_c), addr_of(params),
        addr_of(tab_c), addr_of(nxt_c), addr_of(lat_c), addr_of(win_c), addr_of(log), 0,
        *(addr_of(a) for a in outputs), engine_threads(spec.org.channels, tx),
    )  # fmt: skip
    # the read sums kept by the engine as requests retire (simulate_sum_c): the
    # per-transaction outputs are neither set beforehand nor read back (depart and
    # forwarded not touched: ctypes' zeroed buffers then cost no page)
    sums = (_I64 * 5)()
    rc = _interruptible(
        tx, (arrays, outputs, sums), lib.simulate_sum_c, ctypes.byref(args), addr_of(sums)
    )
    status, cycles = scalars[0], scalars[1]
    if rc < 0 or status != 0:
        return None  # the general path raises the engine's error, or the deadlock
    return run_stats(
        spec,
        drain=drain,
        cycles=cycles,
        snap=list(snap),
        final=list(final),
        sums=tuple(sums),
        active_sum=sum(active),
        lines=n,
    )
