"""The DRAM engine built from C (``engine.c`` and its ``engine_*.h``): the controller and timing
model of :func:`nmp.memory.engine.simulate`, computed another way, with the same results.

The numba engine stays the reference. ``engine.c`` issues every command at the same cycle, so
every output is identical but the last, the count of evaluations: it looks at each bank's two
request classes (row hit, row miss) instead of each request, keeps exact wake times instead of
lower bounds, runs each channel on its own, coupled only by the in-order frontend, and decodes
the lines' addresses itself (see the file's header). A test replays every reference case and a
set of configurations the cases do not use (closed rows, no jumps, odd queue sizes, dual issue,
writes and arrivals, the NMP views) through both and compares every output and a log of the
commands.

The library is built when the package is installed (``setup.py``, into the package folder),
else once per machine at first use, with the C compiler :func:`compiler` picks (``$CC``, else
the newest Clang on the ``PATH``, else ``cc``; ``cc`` too where that Clang fails) at ``-O3
-march=native`` (GCC: and ``-mtune=generic``) into the user cache (``$NMP_CACHE_DIR``, else
``$XDG_CACHE_HOME/nmp``, else ``~/.cache/nmp``); see :mod:`nmp.memory.native_build`. Its name
hashes the sources, the compiler command and where it resolves to, and the CPU, so an edit,
another compiler or another machine sharing the home directory gets its own build. Without a
compiler :func:`available` is False (:func:`unavailable_reason` says why) and the driver runs
the numba engine, with the same results; so it does for an organization the C engine does not
take (:func:`unsupported`: more than 64 banks or 8 ranks per channel, a windowed timing rule
below the rank). The C call releases the GIL (threads replay in parallel) and may run the
channels of one replay on several threads (``threads``), and the build (once: about 18 s
with Clang 14, 22 s with GCC 12) replaces the numba engine's first compilation (about 15 s).
"""

from __future__ import annotations

import ctypes
import threading
from types import SimpleNamespace

import numpy as np

from nmp.memory.counters import N_COUNTERS
from nmp.memory.engine_fields import EngineArgs
from nmp.memory.engine_params import check_params
from nmp.memory.native_lib import (  # the library itself: loaded without numpy
    _ERRORS,
    INTERRUPTIBLE_TRANSACTIONS,
    _interruptible,
    _library,
    available,
    run_work,
    unavailable_reason,
    unsupported_rules,
)
from nmp.memory.standards import NCMD

__all__ = [
    "INTERRUPTIBLE_TRANSACTIONS",
    "_interruptible",
    "_library",
    "available",
    "parse_trace",
    "read_sums",
    "simulate",
    "simulate_summary",
    "split_requests",
    "unavailable_reason",
    "unsupported",
]


def unsupported(ranks: int, bankgroups: int, banks: int, tab_i, win) -> str | None:
    """Why the C engine does not take an organization of ``ranks`` x ``bankgroups`` x ``banks``
    per channel with the constraint table ``tab_i``/``win`` (as :func:`simulate` takes them), or
    None. The driver then runs the numba engine."""
    return unsupported_rules(
        ranks, bankgroups, banks, np.asarray(tab_i).ravel().tolist(), np.asarray(win).tolist()
    )


def _i64(a) -> np.ndarray:
    return np.ascontiguousarray(a, np.int64)


# Per-transaction outputs of a replay that only sums them (no timeline kept): this thread's
# buffers (up to this many transactions) rather than fresh arrays. A fresh array's pages are
# mapped on the engine's first write, which cost 0.26-1.25 ms of CPU per replay of 40-130 k
# transactions (3 int64 arrays; 0.06-0.43 ms reused), 3-10 % of such a replay.
_OUT_SCRATCH_MAX = 1 << 19
_OUT_SCRATCH = threading.local()


def _outputs(n: int, channels: int, ranks: int, scratch: bool) -> SimpleNamespace:
    """simulate_c's output arrays for n transactions; with ``scratch`` (and n not above
    _OUT_SCRATCH_MAX) the per-transaction ones are views of this thread's buffers, valid until
    its next scratch run. ``ptrs``: their addresses, in :class:`EngineArgs`' order."""
    # the four small outputs are views of one fresh array: one allocation, one address
    small = np.zeros(4 + 2 * N_COUNTERS + channels * ranks, np.int64)
    s0 = small.ctypes.data
    c1, c2 = 4 + N_COUNTERS, 4 + 2 * N_COUNTERS
    if scratch and n <= _OUT_SCRATCH_MAX:
        buf = getattr(_OUT_SCRATCH, "buf", None)
        if buf is None or buf[1].size < n:
            size = max(n, 1 << 14)
            per_tx_new, fwd_new = np.empty(3 * size, np.int64), np.empty(size, np.bool_)
            buf = _OUT_SCRATCH.buf = (
                per_tx_new,
                fwd_new,
                per_tx_new.ctypes.data,
                fwd_new.ctypes.data,
            )
        per_tx, fwd_all, p0, f0 = buf
        size = fwd_all.size
        fwd = fwd_all[:n]
        arrive, depart, done = per_tx[:n], per_tx[size : size + n], per_tx[2 * size : 2 * size + n]
        tx_ptrs = (p0, p0 + 8 * size, p0 + 16 * size, f0)
    else:
        arrive, depart, done = (np.empty(n, np.int64) for _ in range(3))
        fwd = np.empty(n, np.bool_)
        tx_ptrs = (arrive.ctypes.data, depart.ctypes.data, done.ctypes.data, fwd.ctypes.data)
    return SimpleNamespace(
        out_scalars=small[:4],
        cnt_snap=small[4:c1],
        cnt=small[c1:c2],
        arrive=arrive,
        depart=depart,
        done=done,
        active_cycles=small[c2:],
        forwarded=fwd,
        keep=(small, arrive, depart, done, fwd),
        # EngineArgs' order: out_scalars, cnt_snap, cnt, arrive, depart, done, active, fwd
        ptrs=(s0, s0 + 32, s0 + 8 * c1, *tx_ptrs[:3], s0 + 8 * c2, tx_ptrs[3]),
    )


# The checked constant inputs of a replay's plan (decode, params, tables: the same objects on
# every replay of a view, as nmp.memory.plan keeps them) and their addresses, by the objects'
# ids (each entry holds its objects, so an id is not reused while it is kept)
_CONSTANTS: dict[tuple, tuple] = {}


def _constants(decode, params, tab_i, nxt, lat, win) -> tuple:
    """(decode, params, tables, their addresses) of :func:`simulate`, their types and shapes
    checked once per set of int64 C-contiguous arrays (every replay of a view passes the same
    ones, nmp.memory.plan's; their values may change between runs, and are read at each)."""
    given = (decode, params, tab_i, nxt, lat, win)
    key = tuple(map(id, given))
    hit = _CONSTANTS.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], given, strict=True)):
        return hit[1]
    params = check_params(params)
    decode = _i64(decode)
    if decode.shape != (12,):
        raise ValueError("decode must hold 12 values: ks, tx shift, 5 positions, 5 masks")
    tables = [_i64(tab_i), _i64(nxt), _i64(lat), _i64(win)]
    if tables[0].shape[1:] != (4, NCMD):
        raise ValueError(f"tab_i must have shape (5, 4, {NCMD})")
    ptrs = (decode.ctypes.data, params.ctypes.data, *(t.ctypes.data for t in tables))
    value = (decode, params, tables, ptrs)  # (their values are read on every run: see simulate)
    if all(a is b for a, b in zip((decode, params, *tables), given, strict=True)):
        # kept only where no copy was made: a copy would miss a change of the caller's values
        if len(_CONSTANTS) > 64:
            _CONSTANTS.clear()
        _CONSTANTS[key] = (given, value)
    return value


def simulate(
    addr, write, arrival, decode, params, tab_i, nxt, lat, win, log, threads=1, *, scratch=False
):
    """:func:`nmp.memory.engine.simulate` of the transactions of lines, in C, with the same
    11-tuple; its last element counts the channel evaluations (the reference counts the memory
    cycles it visited). The C engine decodes the addresses itself (no node-id arrays are
    written and read back): ``addr`` (uint64), ``write`` (bool or int8) and ``arrival``
    (int64, non-decreasing) per line, each line split into ``2 ** decode[0]`` transactions
    ``tx_bytes = 2 ** decode[1]`` apart; ``decode[2:7]`` and ``decode[7:12]`` the bit position
    and mask of the channel, rank, bank group, bank and row in a transaction number (address >>
    decode[1]), as :func:`nmp.memory.lines.lines_inputs` decodes them for the numba engine.
    ``params``: the run's configuration (:func:`nmp.memory.engine_params.engine_params`). The
    configuration must be one the C engine takes (:func:`unsupported` is None).

    ``threads``: a run of several channels runs them on up to this many threads (the calling
    one included; engine_threads.h), with the same results, the count of evaluations
    included.

    ``scratch``: the per-transaction outputs (``arrive``, ``depart``, ``done``,
    ``forwarded``) are views of this thread's buffers, valid until its next scratch run (a
    replay that only sums them)."""
    lib, why = _library()
    if lib is None:
        raise RuntimeError(f"the native DRAM engine is not available: {why}")
    decode, params, tables, const_ptrs = _constants(decode, params, tab_i, nxt, lat, win)
    # read on every run: a caller may change a field of the same arrays between runs
    p = params[0]
    channels, ranks, ks = int(p["channels"]), int(p["ranks"]), int(decode[0])
    addr = np.ascontiguousarray(addr, np.uint64)
    write = np.ascontiguousarray(write)
    if write.dtype not in (np.int8, np.uint8, np.bool_):
        write = (write != 0).astype(np.int8)
    arrival = _i64(arrival)
    if write.shape != addr.shape or arrival.shape != addr.shape:
        raise ValueError("addr, write and arrival must have one value per line")
    if log.dtype != np.int64 or not log.flags.c_contiguous or log.shape[1:] != (5,):
        raise ValueError("log must be a C-contiguous int64 array of shape (M, 5)")
    n = addr.shape[0] << ks
    outputs = _outputs(n, channels, ranks, scratch)
    keep = [addr, write, arrival, decode, params, *tables, log, outputs.keep]
    args = EngineArgs(
        addr.ctypes.data, write.ctypes.data, arrival.ctypes.data, n, *const_ptrs,
        log.ctypes.data, log.shape[0], *outputs.ptrs, max(1, int(threads)),
    )  # fmt: skip
    rc = _interruptible(run_work(n, arrival), keep, lib.simulate_c, ctypes.byref(args))
    if rc < 0:
        raise RuntimeError(f"native DRAM engine: {_ERRORS.get(rc, f'error {rc}')}")
    o = outputs
    status, cycles, clk_end, evals = map(int, o.out_scalars)
    return (
        status,
        cycles,
        clk_end,
        o.cnt_snap,
        o.cnt,
        o.arrive,
        o.depart,
        o.done,
        o.forwarded,
        o.active_cycles,
        evals,
    )


# A run's scalars, counters, active cycles and read sums in one of this thread's int64 buffers
# (SUMMARY_MAX ranks of channels at most), read back with one ``tolist``; with the
# per-transaction scratch outputs and these addresses taken once per buffer, a run that is
# only summed takes the address of its three line arrays alone (was ten, and two calls).
_SUMMARY = threading.local()
_SUMMARY_RANKS_MAX = 256
_NO_LOG = np.full((0, 5), -1, np.int64)


def _summary_buffer() -> tuple[np.ndarray, int, int]:
    """(this thread's summary buffer, its address, the address of an empty command log): where
    :func:`simulate_summary` writes."""
    buf = getattr(_SUMMARY, "buf", None)
    if buf is None:
        arr = np.zeros(4 + 2 * N_COUNTERS + _SUMMARY_RANKS_MAX + 5 + 8, np.int64)
        buf = _SUMMARY.buf = (arr, arr.ctypes.data, _NO_LOG.ctypes.data)
    return buf


def simulate_summary(
    addr, write, arrival, ks, decode, params, tab_i, nxt, lat, win, threads=1, *, has_write=True
):
    """What a replay that keeps no timeline needs of :func:`simulate` and :func:`read_sums`, in
    one C call (``simulate_sum_c``: the engine keeps the read sums as requests retire, and sets
    no per-transaction output beforehand nor reads them back): (status, cycles, clk_end,
    counters at ``cycles`` (list), counters at the end (list), active cycles summed over
    ranks, the read sums (tuple)). ``addr`` uint64,
    ``write`` int8/bool and ``arrival`` int64 per line (the engine's inputs, as
    :func:`nmp.memory.lines.native_lines` gives them; ``has_write`` False: ``write`` is all
    zeros, and the sums count every transaction a read), ``ks`` = ``decode[0]``. The same
    figures as ``simulate(..., scratch=True)`` then ``read_sums`` (a test compares them)."""
    lib, why = _library()
    if lib is None:
        raise RuntimeError(f"the native DRAM engine is not available: {why}")
    decode, params, tables, const_ptrs = _constants(decode, params, tab_i, nxt, lat, win)
    p = params[0]  # read on every run: a caller may change a field between runs
    channels, ranks = int(p["channels"]), int(p["ranks"])
    if int(decode[0]) != ks:
        raise ValueError("ks must be decode[0]")
    n_lines = addr.shape[0]
    n = n_lines << ks
    wr = write
    if (
        addr.dtype != np.uint64
        or arrival.dtype != np.int64
        or wr.dtype not in (np.int8, np.uint8, np.bool_)
        or not (addr.flags.c_contiguous and wr.flags.c_contiguous and arrival.flags.c_contiguous)
        or wr.shape[0] < n_lines
        or arrival.shape != addr.shape
    ):
        raise ValueError("addr (uint64), write (int8 or bool) and arrival (int64) per line")
    if channels * ranks > _SUMMARY_RANKS_MAX or n > _OUT_SCRATCH_MAX:
        return _summary_of_simulate(
            addr, wr, arrival, ks, decode, params, tables, threads, has_write
        )
    summary, s0, log_ptr = _summary_buffer()
    # (engine.c zeroes the counters and active cycles itself and writes the scalars)
    outputs = _outputs_at(n, s0)
    wp = wr.ctypes.data
    args = EngineArgs(
        addr.ctypes.data, wp, arrival.ctypes.data, n, *const_ptrs,
        log_ptr, 0, *outputs[0], max(1, int(threads)),
    )  # fmt: skip
    keep = (addr, wr, arrival, decode, params, tables, summary, outputs[1])
    c1, c2, c3 = 4 + N_COUNTERS, 4 + 2 * N_COUNTERS, 4 + 2 * N_COUNTERS + channels * ranks
    # the read sums kept by the engine as requests retire (simulate_sum_c), after the active
    # cycles: no per-transaction output set beforehand or read back (a test compares them
    # with simulate then read_sums)
    rc = _interruptible(
        run_work(n, arrival), keep, lib.simulate_sum_c, ctypes.byref(args), s0 + 8 * c3
    )
    if rc < 0:
        raise RuntimeError(f"native DRAM engine: {_ERRORS.get(rc, f'error {rc}')}")
    values = summary[: c3 + 5].tolist()
    return (
        values[0], values[1], values[2], values[4:c1], values[c1:c2],
        sum(values[c2:c3]), tuple(values[c3:]),
    )  # fmt: skip


# EngineArgs' fields by position (every one 8 bytes: simulate_summaries fills an int64 table)
_ARG = {field[0]: k for k, field in enumerate(EngineArgs._fields_)}


def simulate_summaries(
    runs: list[tuple[np.ndarray, np.ndarray, np.ndarray]], ks: int, tab_i, nxt, lat, win
) -> list[tuple]:
    """:func:`simulate_summary` of several runs of lines without writes or arrivals (a design
    point's node streams on one view) in one C call: per run (``addr`` uint64, its ``decode``,
    its ``params``: :meth:`nmp.memory.plan._Plan.narrowed`'s), the same tuple as a run alone
    (a test compares them). One channel thread each, summed as :func:`simulate_summary`'s
    run; the runs share this thread's per-transaction buffers (``arrive``)."""
    lib, why = _library()
    if lib is None:
        raise RuntimeError(f"the native DRAM engine is not available: {why}")
    count = len(runs)
    if count == 0:
        return []
    n_max = max(int(a.shape[0]) for a, _, _ in runs) << ks
    block = 4 + 2 * N_COUNTERS + _SUMMARY_RANKS_MAX
    if n_max > _OUT_SCRATCH_MAX or ctypes.sizeof(EngineArgs) != 8 * len(_ARG):
        return [
            _summary_of_simulate(a, _zeros_i8(a), np.zeros(a.shape[0], np.int64), ks, d, p,
                                 [tab_i, nxt, lat, win], 1, False)
            for a, d, p in runs
        ]  # fmt: skip
    table = np.zeros((count, len(_ARG)), np.int64)
    out = np.zeros((count, block), np.int64)
    sums = np.zeros((count, 5), np.int64)
    keep: list = [table, out, sums]
    zeros = np.zeros(n_max >> ks, np.int64)
    o0 = out.ctypes.data
    rank_counts = []
    a_addr, a_n, a_decode, a_win = _ARG["addr"], _ARG["n"], _ARG["decode"], _ARG["win"] + 1
    for i, (addr, decode, params) in enumerate(runs):
        if addr.dtype != np.uint64 or not addr.flags.c_contiguous:
            raise ValueError("addr must be C-contiguous uint64")
        _, params, tables, const_ptrs = _constants(decode, params, tab_i, nxt, lat, win)
        p = params[0]
        ranks = int(p["channels"]) * int(p["ranks"])
        if ranks > _SUMMARY_RANKS_MAX or int(decode[0]) != ks:
            raise ValueError("runs of at most 256 ranks, each decoding ks")
        rank_counts.append(ranks)
        keep += (addr, decode, params, tables)
        row = table[i]
        row[a_addr] = addr.ctypes.data
        row[a_n] = addr.shape[0] << ks
        row[a_decode:a_win] = const_ptrs
    table[:, _ARG["out_scalars"]] = o0 + 8 * block * np.arange(count, dtype=np.int64)
    # the same in every run: no writes, no arrivals, no log, this thread's outputs
    table[:, _ARG["line_wr"]] = table[:, _ARG["line_arr"]] = zeros.ctypes.data
    table[:, _ARG["log"]] = _NO_LOG.ctypes.data
    _, buf, tx = _outputs_at(n_max, 0)  # (this thread's per-transaction outputs)
    starts = table[:, _ARG["out_scalars"]]
    c1, c2 = 4 + N_COUNTERS, 4 + 2 * N_COUNTERS
    table[:, _ARG["cnt_snap"]] = starts + 32
    table[:, _ARG["cnt"]] = starts + 8 * c1
    table[:, _ARG["active_cycles"]] = starts + 8 * c2
    table[:, _ARG["arrive"] : _ARG["done"] + 1] = tx
    table[:, _ARG["forwarded"]] = _OUT_SCRATCH.buf[3]
    table[:, _ARG["threads"]] = 1
    keep += (zeros, buf)
    rc = _interruptible(
        int(table[:, _ARG["n"]].sum()), keep, lib.simulate_many_c, table.ctypes.data, count, 0,
        sums.ctypes.data,
    )  # fmt: skip
    if rc < 0:
        raise RuntimeError(f"native DRAM engine: {_ERRORS.get(rc, f'error {rc}')}")
    results = []
    for ranks, values, read_sums in zip(rank_counts, out.tolist(), sums.tolist(), strict=True):
        results.append((
            values[0], values[1], values[2], values[4:c1], values[c1:c2],
            sum(values[c2 : c2 + ranks]), tuple(read_sums),
        ))  # fmt: skip
    return results


def _zeros_i8(addr: np.ndarray) -> np.ndarray:
    return np.zeros(addr.shape[0], np.int8)


def _outputs_at(n: int, s0: int) -> tuple[tuple, object, tuple]:
    """(EngineArgs' output addresses with the small outputs in the summary buffer at ``s0``, the
    arrays to keep alive, the addresses of arrive, depart, done): this thread's per-transaction
    scratch outputs (:func:`_outputs`' buffers)."""
    buf = getattr(_OUT_SCRATCH, "buf", None)
    if buf is None or buf[1].size < n:
        _outputs(n, 1, 1, True)  # (makes this thread's buffers)
        buf = _OUT_SCRATCH.buf
    per_tx, fwd_all, p0, f0 = buf
    size = fwd_all.size
    tx = (p0, p0 + 8 * size, p0 + 16 * size)
    c1, c2 = 4 + N_COUNTERS, 4 + 2 * N_COUNTERS
    # EngineArgs' order: out_scalars, cnt_snap, cnt, arrive, depart, done, active, fwd
    return (s0, s0 + 32, s0 + 8 * c1, *tx, s0 + 8 * c2, f0), buf, tx


def _summary_of_simulate(
    addr, write, arrival, ks, decode, params, tables, threads, has_write
) -> tuple:
    """:func:`simulate_summary` through :func:`simulate` and :func:`read_sums` (a run larger
    than the thread's buffers)."""
    tab_i, nxt, lat, win = tables
    out = simulate(addr, write, arrival, decode, params, tab_i, nxt, lat, win, _NO_LOG, threads)
    status, cycles, clk_end, snap, cnt, arrive, depart, done, _, active, _ = out
    sums = read_sums(write if has_write else None, ks, arrive, depart, done, cycles)
    return status, cycles, clk_end, snap.tolist(), cnt.tolist(), int(active.sum()), sums


def read_sums(write, ks: int, arrive, depart, done, cycles: int) -> tuple[int, ...]:
    """:func:`nmp.memory.engine.read_sums` in C: over the transactions of a run (``2 ** ks`` per
    line; ``write`` per line (int8 or bool), or None for no writes), the reads; the reads whose
    data returned by ``cycles`` and the sum of their latencies; the reads served at all and the
    sum of theirs; the last done cycle."""
    lib, why = _library()
    if lib is None:
        raise RuntimeError(f"the native DRAM engine is not available: {why}")
    n = done.shape[0]
    for a in (arrive, depart, done):
        if a.dtype != np.int64 or not a.flags.c_contiguous or a.shape != (n,):
            raise ValueError("arrive, depart and done must be C-contiguous int64 of one length")
    wp = None
    if write is not None:
        write = np.ascontiguousarray(write)
        if write.dtype not in (np.int8, np.uint8, np.bool_) or write.shape[0] << ks < n:
            raise ValueError("write must hold one int8 or bool per line")
        wp = write.ctypes.data
    out = np.empty(5, np.int64)
    lib.read_sums_c(
        wp, ks, arrive.ctypes.data, depart.ctypes.data, done.ctypes.data, n, cycles,
        out.ctypes.data,
    )  # fmt: skip
    return tuple(out.tolist())


def parse_trace(data: bytes, dtype: np.dtype) -> np.ndarray | None:
    """The requests of a trace text in the canonical Ramulator form (every line exactly
    ``LD 0x<hex>`` or ``ST 0x<hex>``, 1-16 digits, ``\n``-separated), read in C
    (``engine_trace.h``) into an array of ``dtype`` (:data:`nmp.memory.trace.REQUEST_DTYPE`:
    the address as uint64, the write flag); None for any other text (the caller reads it the
    general way) or where the library is not built."""
    lib, _ = _library()
    if lib is None or dtype.itemsize != 9:
        return None
    cap = data.count(b"\n") + 1  # the lines, the last one perhaps without its newline
    out = np.empty(cap, dtype)
    n = lib.parse_trace_c(data, len(data), out.ctypes.data, cap)
    if n < 0:
        return None
    return out if n == cap else out[:n]


_SPLIT = threading.local()


def line_bounds(addr: np.ndarray) -> tuple[int, int, int] | None:
    """(largest, OR, AND) of C-contiguous uint64 line addresses (0, 0, 0 for none) in one C
    pass (``line_bounds_c``): what :func:`nmp.memory.lines.check_lines` and
    :func:`nmp.memory.plan.narrow_fields` reduce a run's lines to; None where the library is
    not built."""
    lib, _ = _library()
    if lib is None:
        return None
    info = getattr(_SPLIT, "bounds", None)
    if info is None:
        info = _SPLIT.bounds = np.empty(3, np.uint64)
    lib.line_bounds_c(addr.ctypes.data, addr.shape[0], info.ctypes.data)
    top, any_bits, all_bits = info.tolist()
    return top, any_bits, all_bits


_U64, _BOOL = np.dtype(np.uint64), np.dtype(np.bool_)


def split_requests(requests: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple] | None:
    """(addresses uint64, write flags bool, (largest address, writes, the addresses' OR and
    AND)) of a request array with fields ``addr`` (uint64) and ``write`` (bool) (a
    :func:`nmp.memory.trace.read_trace` array), read in one C pass (``split_requests_c``) into
    this thread's buffers, valid until its next call (a replay that only sums its run); None
    where the library is not built or the array is another layout or too long for the buffers.
    numpy's copy of each field of a 9-byte record and its reductions took 0.1-0.2 ms per
    replay of 50-80 k requests."""
    lib, _ = _library()
    fields = requests.dtype.fields
    if lib is None or fields is None or requests.ndim != 1:
        return None
    addr_f, wr_f = fields.get("addr"), fields.get("write")
    if addr_f is None or wr_f is None or addr_f[0] != _U64 or wr_f[0] != _BOOL:
        return None
    n = requests.shape[0]
    if n > _OUT_SCRATCH_MAX:
        return None
    buf = getattr(_SPLIT, "buf", None)
    if buf is None or buf[0].size < n:
        size = max(n, 1 << 14)
        a, w, info = np.empty(size, np.uint64), np.empty(size, np.bool_), np.empty(4, np.uint64)
        buf = _SPLIT.buf = (a, w, info, a.ctypes.data, w.ctypes.data, info.ctypes.data)
    addr, wr, info, a0, w0, i0 = buf
    lib.split_requests_c(
        requests.ctypes.data, requests.strides[0], addr_f[1], wr_f[1], n, a0, w0, i0
    )  # fmt: skip
    top, writes, any_bits, all_bits = info.tolist()
    return addr[:n], wr[:n], (top, writes, any_bits, all_bits)
