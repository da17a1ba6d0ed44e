"""``replay(trace_or_requests, spec) -> MemStats``: lower requests to the engine and back
(check the lines, run, collect statistics). The C engine takes the lines and decodes them
itself; the numba engine takes their transactions decoded to node ids (:func:`lines_inputs`)."""

from __future__ import annotations

import functools
import os
import threading
import warnings
from pathlib import Path

import numba as nb
import numpy as np

from nmp.errors import NmpError, TraceError
from nmp.memory import engine, native
from nmp.memory.mapping import FIELDS, _segments, decode_address
from nmp.memory.spec import MemorySpec
from nmp.memory.standards import COMMANDS, build_table
from nmp.memory.stats import MemStats, command_energy_pj
from nmp.memory.trace import REQUEST_DTYPE, read_trace
from nmp.units import log2_exact


@functools.lru_cache(maxsize=32)
def _table_arrays(standard: str, timing: tuple[tuple[str, int], ...], bus_level: str):
    tab = build_table(standard, dict(timing), bus_level)
    scope = np.tile(tab.scope, (4, 1))
    tab_i = np.ascontiguousarray(np.stack([tab.start, tab.end, tab.sstart, tab.send, scope]))
    return tab_i, tab.nxt, tab.lat, tab.win


@nb.njit(cache=True)
def _decode_lines(
    addr, write, has_write, k, tx, tx_shift, pos, mask, R, G, B, out, wr, full, zero_arrival
):
    """One pass over the lines: each split into its ``k`` transactions (addr, addr + tx, ...),
    decoded as :func:`decode_address` straight to the engine's global node ids (channel, rank,
    bank group, bank and row each occupy one bit range ``pos``/``mask`` of the transaction
    number). Fills ``out[i * m + j]`` (m = n * k transactions; i: channel, rank, bank group,
    bank, row, transaction key (address / tx_bytes), arrival 0; without ``full`` only bank
    group, bank, row and key; the arrival only with ``zero_arrival``) and ``wr[j]`` (the
    writes)."""
    n = addr.shape[0] * k
    p0, p1, p2, p3, p4 = pos[0], pos[1], pos[2], pos[3], pos[4]
    m0, m1, m2, m3, m4 = mask[0], mask[1], mask[2], mask[3], mask[4]
    for j in range(n):
        i = j // k if k > 1 else j
        a = addr[i] + np.uint64(j - i * k) * tx
        x = np.int64(a >> tx_shift)
        rank = ((x >> p0) & m0) * R + ((x >> p1) & m1)
        bg = rank * G + ((x >> p2) & m2)
        if full:
            out[j] = (x >> p0) & m0
            out[n + j] = rank
        if zero_arrival:
            out[6 * n + j] = 0
        out[2 * n + j] = bg
        out[3 * n + j] = bg * B + ((x >> p3) & m3)
        out[4 * n + j] = (x >> p4) & m4
        out[5 * n + j] = x
        wr[j] = 1 if has_write and write[i] else 0


class _Plan:
    """What every replay on one (frozen) spec shares: decode segments, engine parameters and
    the constraint table."""

    def __init__(self, spec: MemorySpec) -> None:
        o = spec.org
        # bit range of each field in the transaction number; only the column may be split
        # (channel interleaving), and the engine needs no column
        pos = np.zeros(len(FIELDS), np.int64)
        mask = np.zeros(len(FIELDS), np.int64)
        low = 0
        for f, nbits, shift in _segments(spec):
            if f != "column":
                assert shift == 0 and mask[FIELDS.index(f)] == 0, "one bit range per field"
                pos[FIELDS.index(f)] = low
                mask[FIELDS.index(f)] = (1 << nbits) - 1
            low += nbits
        self.spec = spec
        self.k = spec.requests_per_line
        self.decode = (
            self.k,
            np.uint64(o.tx_bytes),
            np.uint64(log2_exact(o.tx_bytes)),
            pos,
            mask,
            o.ranks,
            o.bankgroups,
            o.banks,
        )
        # the C engine decodes the lines itself (native.simulate): log2 of the transactions per
        # line, of the transaction size, then the fields' positions and masks
        self.native_decode = np.array(
            [log2_exact(self.k), log2_exact(o.tx_bytes), *pos[:5], *mask[:5]], np.int64
        )
        self.capacity = spec.capacity_bytes
        # one channel and one rank (a node's view): their ids are all 0
        self.single_rank = o.channels == 1 and o.ranks == 1
        self.tables = _table_arrays(
            spec.standard, tuple(sorted(spec.timing.items())), spec.bus_level
        )
        # why the C engine does not take this spec (the numba engine replays it), or None
        self.native_unsupported = native.unsupported(
            o.ranks, o.bankgroups, o.banks, self.tables[0], self.tables[3]
        )
        self._params: dict[tuple[bool, bool], tuple[np.ndarray, np.ndarray]] = {}

    def engine_params(self, drain: bool, jump: bool) -> tuple[np.ndarray, np.ndarray]:
        key = (bool(drain), bool(jump))
        if key not in self._params:
            self._params[key] = _engine_params(self.spec, *key)
        return self._params[key]


_PLANS: dict[int, _Plan] = {}  # id(spec) -> plan of that spec (specs are frozen)


def _plan(spec: MemorySpec) -> _Plan:
    p = _PLANS.get(id(spec))
    if p is not None and p.spec is spec:
        return p
    if len(_PLANS) > 64:
        _PLANS.clear()
    p = _PLANS[id(spec)] = _Plan(spec)
    return p


_NO_WRITE = np.zeros(0, np.bool_)


# Engine inputs of replays inside this package are only read while the engine runs: their
# buffers are kept per thread (up to this many transactions) rather than freshly mapped.
_SCRATCH_MAX = 1 << 19
_SCRATCH = threading.local()


def _buffers(m: int, scratch: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(int64 [7 m], int8 [m], int64 zeros [>= m] or None): the engine inputs' storage; with
    ``scratch`` this thread's buffers, and zeros that are never written (engine inputs are only
    read) for the fields that are 0 throughout."""
    if not scratch or m > _SCRATCH_MAX:
        return np.empty(7 * m, np.int64), np.empty(m, np.int8), None
    buf = getattr(_SCRATCH, "buf", None)
    if buf is None or buf[1].size < m:
        size = max(m, 1 << 14)
        buf = np.empty(7 * size, np.int64), np.empty(size, np.int8), np.zeros(size, np.int64)
        _SCRATCH.buf = buf
    return buf


def _lines(addr, spec: MemorySpec, write, arrival):
    """(addr uint64, per-line writes or None for none, has_write, arrival int64 or None) of
    line addresses, writes (an array or one bool for all) and optional arrival cycles, checked:
    every transaction within the capacity (else the TraceError naming the address), arrivals
    non-decreasing."""
    plan = _plan(spec)
    addr = np.ascontiguousarray(addr, dtype=np.uint64)
    if isinstance(write, bool | np.bool_):
        has_write = bool(write)
        wr_in = np.ones(addr.shape[0], np.bool_) if has_write else None
    else:
        has_write = True
        wr_in = np.ascontiguousarray(np.broadcast_to(np.asarray(write, bool), addr.shape))
    if addr.size:
        k, tx = plan.k, int(plan.decode[1])
        if int(addr.max()) + (k - 1) * tx >= plan.capacity:
            txs = (addr[:, None] + np.arange(k, dtype=np.uint64)[None, :] * np.uint64(tx)).ravel()
            decode_address(txs, spec)  # raises the TraceError naming the address
    if arrival is not None:
        arrival = np.ascontiguousarray(arrival, np.int64)
        if arrival.shape != addr.shape:
            raise TraceError("one arrival cycle per request expected")
        if arrival.size and (np.diff(arrival) < 0).any():
            raise TraceError("request arrival cycles must be non-decreasing")
    return addr, wr_in, has_write, arrival


def lines_inputs(
    addr: np.ndarray,
    spec: MemorySpec,
    write: np.ndarray | bool = False,
    arrival: np.ndarray | None = None,
    *,
    scratch: bool = False,
) -> tuple:
    """:func:`engine_inputs` of plain arrays: line addresses, writes (an array or one bool for
    all) and optional arrival cycles (non-decreasing). ``scratch``: the arrays are views of
    this thread's buffers, valid until its next ``scratch`` call."""
    plan = _plan(spec)
    addr, wr_in, has_write, arrival = _lines(addr, spec, write, arrival)
    m = addr.shape[0] * plan.k
    out, wr, zeros = _buffers(m, scratch)
    full = zeros is None or not plan.single_rank
    # scratch zeros stand for the arrivals (when none are given)
    _decode_lines(
        addr,
        _NO_WRITE if wr_in is None else wr_in,
        has_write,
        *plan.decode,
        out,
        wr,
        full,
        zeros is None,
    )
    nodes = [out[i * m : (i + 1) * m] for i in range(7)]
    if not full:
        nodes[0] = nodes[1] = nodes[6] = zeros[:m]
    elif zeros is not None:
        nodes[6] = zeros[:m]
    wr = wr[:m]
    channel, rank, bg, bank, row, key, zero = nodes
    arr = zero if arrival is None else np.repeat(arrival, plan.k)
    return (channel, rank, bg, bank, row, wr, key, arr)


def engine_inputs(requests: np.ndarray, spec: MemorySpec, *, scratch: bool = False) -> tuple:
    """Split lines into transactions (HBM: 64 B -> addr, addr+32), decode, flatten node ids:
    the numba engine's inputs (``scratch``: as in :func:`lines_inputs`)."""
    names = requests.dtype.names
    return lines_inputs(
        requests["addr"],
        spec,
        requests["write"],
        requests["arrival"] if names is not None and "arrival" in names else None,
        scratch=scratch,
    )


def _engine_params(spec: MemorySpec, drain: bool, jump: bool) -> tuple[np.ndarray, np.ndarray]:
    """``params`` and ``wm`` of :func:`engine.simulate` for ``spec`` (see its docstring)."""
    o, c = spec.org, spec.controller
    params = np.array(
        [
            o.channels,
            o.ranks,
            o.bankgroups,
            o.banks,
            c.read_queue,
            c.write_queue,
            c.frontend_ratio,
            spec.timing["nREFI"],
            spec.read_latency_cycles,
            int(c.dual_issue),
            int(c.row_policy == "closed"),
            int(c.refresh == "all-bank"),
            int(drain),
            1,  # skip_blocked: a PRE closing an active-buffer row is not eligible (README §4)
            int(jump),
        ],
        np.int64,
    )
    wm = np.array(
        [c.wr_high_watermark * c.write_queue, c.wr_low_watermark * c.write_queue], np.float64
    )
    return params, wm


_NO_LOG = np.full((0, 5), -1, np.int64)
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


def _zeros(n: int) -> np.ndarray:
    """This thread's int64 zeros (at least n; never written: engine inputs are only read)."""
    z = getattr(_SCRATCH, "zeros", None)
    if z is None or z.size < n:
        z = _SCRATCH.zeros = np.zeros(max(n, 1 << 14), np.int64)
    return z


def _native_lines(addr, wr_in, arrival, scratch: bool):
    """The C engine's per-line writes (int8) and arrivals (int64): the given ones, else zeros
    (with ``scratch`` this thread's, up to its scratch size)."""
    n = addr.shape[0]
    zeros = _zeros(n) if scratch and n <= _SCRATCH_MAX else np.zeros(n, np.int64)
    if wr_in is None:
        wr_in = zeros.view(np.int8)[:n]
    if arrival is None:
        arrival = zeros[:n]
    return wr_in, arrival


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
    the lines itself; the numba engine takes them decoded (:func:`lines_inputs`)."""
    checked = _lines(lines[0], spec, lines[1], lines[2])
    return _run(checked, spec, drain=drain, jump=jump, log_size=log_size, scratch=scratch)


def _run(
    checked: tuple, spec: MemorySpec, *, drain: bool, jump: bool, log_size: int, scratch: bool
):
    """:func:`run_engine` of lines already checked (:func:`_lines`)."""
    addr, wr_in, has_write, arrival = checked
    plan = _plan(spec)
    params, wm = plan.engine_params(drain, jump)
    log = np.full((log_size, 5), -1, np.int64) if log_size else _NO_LOG
    native_ok = engine_backend() == "native"
    if native_ok and plan.native_unsupported:
        _warn_unsupported(plan.native_unsupported)
        native_ok = False
    if native_ok:
        wr_in, arrival = _native_lines(addr, wr_in, arrival, scratch)
        out = native.simulate(
            addr, wr_in, arrival, plan.native_decode, params, wm, *plan.tables, log
        )
    else:
        inputs = lines_inputs(
            addr, spec, has_write if wr_in is None else wr_in, arrival, scratch=scratch
        )
        out = engine.simulate(*inputs, params, wm, *plan.tables, log)
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


@nb.njit(cache=True)
def _read_sums(write, has_write, ks, arrive, depart, done, cycles):
    """One pass over the transactions (``2 ** ks`` per line, ``write`` per line where
    ``has_write``): reads; reads whose data returned by ``cycles`` and the sum of their
    latencies; reads served at all and the sum of theirs; the last done cycle."""
    reads = at_sum = served = served_sum = 0
    last = np.int64(0)
    for j in range(done.shape[0]):
        last = max(last, done[j])
        if has_write and write[j >> ks]:
            continue
        reads += 1
        d = depart[j]
        if d >= 0:
            served += 1
            served_sum += d - arrive[j]
            if d <= cycles:
                at_sum += d - arrive[j]
    return reads, at_sum, served, served_sum, last


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
    names = requests.dtype.names
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
    checked = _lines(lines[0], spec, lines[1], lines[2])
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
    reads, at_sum, served, served_sum, last_done = (
        int(v)
        for v in _read_sums(
            _NO_WRITE if wr_in is None else wr_in,
            wr_in is not None,
            ks,
            arrive,
            depart,
            done,
            cycles,
        )
    )
    E = engine
    snap, final = snap.tolist(), final.tolist()  # Python ints
    # Ramulator's avg_read_latency at `cycles`: reads whose data returned by then (forwarded
    # ones with latency 1), over the RD commands issued by then.
    snap_counts = _counts(snap)
    at_cycles = {
        "cmd_counts": snap_counts,
        "row_hits": int(snap[E.C_HIT_R] + snap[E.C_HIT_W]),
        "row_misses": int(snap[E.C_MISS_R] + snap[E.C_MISS_W]),
        "row_conflicts": int(snap[E.C_CONF_R] + snap[E.C_CONF_W]),
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
        row_hits=int(cnt[E.C_HIT_R] + cnt[E.C_HIT_W]),
        row_misses=int(cnt[E.C_MISS_R] + cnt[E.C_MISS_W]),
        row_conflicts=int(cnt[E.C_CONF_R] + cnt[E.C_CONF_W]),
        read_row_hits=int(cnt[E.C_HIT_R]),
        read_row_misses=int(cnt[E.C_MISS_R]),
        read_row_conflicts=int(cnt[E.C_CONF_R]),
        write_row_hits=int(cnt[E.C_HIT_W]),
        write_row_misses=int(cnt[E.C_MISS_W]),
        write_row_conflicts=int(cnt[E.C_CONF_W]),
        reads_forwarded=int(cnt[E.C_FWD]),
        writes_coalesced=int(cnt[E.C_COAL]),
        avg_read_latency_cycles=avg_lat,
        bandwidth_gbps=bw,
        bandwidth_utilization=bw / spec.peak_bandwidth_gbps if spec.peak_bandwidth_gbps else 0.0,
        energy_pj=float(sum(energy.values())),
        energy_breakdown_pj=energy,
        at_cycles=at_cycles,
        active_cycles=active_sum,
        timeline={"arrive": arrive, "done": done} if timeline else None,
    )
