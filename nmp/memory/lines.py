"""The lines of a replay (addresses, writes, arrivals): their checks, and their transactions
decoded to node ids, the numba engine's inputs (the C engine decodes them itself). The decoding
kernel lives with the numba engine (:func:`nmp.memory.engine.decode_lines`) and loads with it:
the C engine's path imports no numba."""

from __future__ import annotations

import threading

import numpy as np

from nmp.errors import TraceError
from nmp.memory.mapping import decode_address
from nmp.memory.plan import plan_of
from nmp.memory.spec import MemorySpec

NO_WRITE = np.zeros(0, np.bool_)


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


def check_lines(addr, spec: MemorySpec, write, arrival, *, addr_max: int | None = None):
    """(addr uint64, per-line writes or None for none, has_write, arrival int64 or None) of
    line addresses, writes (an array or one bool for all) and optional arrival cycles, checked:
    every transaction within the capacity (else the TraceError naming the address), arrivals
    non-decreasing. ``addr_max``: the largest address where the caller has it already."""
    plan = plan_of(spec)
    addr = np.ascontiguousarray(addr, dtype=np.uint64)
    if isinstance(write, bool | np.bool_):
        has_write = bool(write)
        wr_in = np.ones(addr.shape[0], np.bool_) if has_write else None
    else:
        has_write = True
        if not (
            isinstance(write, np.ndarray)
            and write.dtype == np.bool_
            and write.shape == addr.shape
            and write.flags.c_contiguous
        ):
            write = np.ascontiguousarray(np.broadcast_to(np.asarray(write, bool), addr.shape))
        wr_in = write
    if addr.size:
        k, tx = plan.k, int(plan.decode[1])
        top = int(addr.max()) if addr_max is None else addr_max
        if top + (k - 1) * tx >= plan.capacity:
            txs = (addr[:, None] + np.arange(k, dtype=np.uint64)[None, :] * np.uint64(tx)).ravel()
            decode_address(txs, spec)  # raises the TraceError naming the address
    if arrival is not None:
        arrival = np.ascontiguousarray(arrival, np.int64)
        if arrival.shape != addr.shape:
            raise TraceError("one arrival cycle per request expected")
        if arrival.size and (np.diff(arrival) < 0).any():
            raise TraceError("request arrival cycles must be non-decreasing")
        if arrival.size:
            _check_refresh_work(int(arrival[-1]), spec)
    return addr, wr_in, has_write, arrival


# The most refresh commands a replay may take to reach its last arrival. The engine skips idle
# cycles but issues every refresh on the way (each rank every nREFI cycles), about 2.5e7 a
# second on one core (`nmp replay` of two lines 1e11 cycles apart: 0.3 s on one rank, 5.5 s on
# 8 channels x 2 ranks, a 2-core Intel Xeon VM). Chosen: 2^30, under a minute; the cycle 2^62
# that a trace may name would take centuries of refreshes.
MAX_REFRESHES = 2**30


def _check_refresh_work(last_arrival: int, spec: MemorySpec) -> None:
    """Refuse a replay whose last arrival lies so far that the refreshes before it would run
    for more than a minute (:data:`MAX_REFRESHES`). Without refresh the engine jumps to it."""
    if not spec.controller.refreshes:
        return
    ranks = spec.org.channels * spec.org.ranks
    refreshes = last_arrival // int(spec.timing["nREFI"]) * ranks
    if refreshes > MAX_REFRESHES:
        raise TraceError(
            f"the last request arrives at cycle {last_arrival:,}: reaching it takes about "
            f"{refreshes:.3g} refresh commands ({ranks} rank(s), one every nREFI = "
            f"{int(spec.timing['nREFI']):,} cycles), above the engine's limit of 2^30 (about a "
            "minute); shift the arrivals to start near 0 or cut the idle gaps"
        )


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
    return checked_inputs(check_lines(addr, spec, write, arrival), spec, scratch=scratch)


# channel, rank, bank group, bank, row, write, key, arrival: one value per transaction
EngineInputs = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray
]


def checked_inputs(checked: tuple, spec: MemorySpec, *, scratch: bool = False) -> EngineInputs:
    """:func:`lines_inputs` of lines :func:`check_lines` already checked."""
    plan = plan_of(spec)
    addr, wr_in, has_write, arrival = checked
    m = addr.shape[0] * plan.k
    out, wr, zeros = _buffers(m, scratch)
    full = zeros is None or not plan.single_rank
    from nmp.memory.engine import decode_lines  # here: numba loads only for the numba engine

    # scratch zeros stand for the arrivals (when none are given)
    decode_lines(
        addr,
        NO_WRITE if wr_in is None else wr_in,
        has_write,
        *plan.decode,
        out,
        wr,
        full,
        zeros is None,
    )
    nodes = [out[i * m : (i + 1) * m] for i in range(7)]
    if not full:
        assert zeros is not None  # (full otherwise)
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


def _zeros(n: int) -> np.ndarray:
    """This thread's int64 zeros (at least n; never written: engine inputs are only read)."""
    z = getattr(_SCRATCH, "zeros", None)
    if z is None or z.size < n:
        z = _SCRATCH.zeros = np.zeros(max(n, 1 << 14), np.int64)
    return z


def native_lines(addr, wr_in, arrival, scratch: bool):
    """The C engine's per-line writes (int8) and arrivals (int64): the given ones, else zeros
    (with ``scratch`` this thread's, up to its scratch size)."""
    n = addr.shape[0]
    zeros = _zeros(n) if scratch and n <= _SCRATCH_MAX else np.zeros(n, np.int64)
    if wr_in is None:
        wr_in = zeros.view(np.int8)[:n]
    if arrival is None:
        arrival = zeros[:n]
    return wr_in, arrival
