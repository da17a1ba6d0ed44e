"""``replay(trace_or_requests, spec) -> MemStats``: lower requests to the engine and back
(split lines into transactions, decode addresses to node ids, run, collect statistics)."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numba as nb
import numpy as np

from nmp.errors import NmpError, TraceError
from nmp.memory import engine
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
def _decode_nodes(addr, tx_shift, seg_field, seg_bits, seg_shift, R, G, B):
    """One pass of :func:`decode_address` (same segments) straight to the engine's global node
    ids: channel, rank, bank group, bank, row, and the transaction key (address / tx_bytes)."""
    n = addr.shape[0]
    out = np.empty((6, n), np.int64)
    fv = np.zeros(6, np.int64)
    for j in range(n):
        x = addr[j] >> tx_shift
        out[5, j] = np.int64(x)
        fv[:] = 0
        for s in range(seg_field.shape[0]):
            fv[seg_field[s]] |= (
                np.int64(x & ((np.uint64(1) << seg_bits[s]) - np.uint64(1))) << (seg_shift[s])
            )
            x = x >> seg_bits[s]
        rank = fv[0] * R + fv[1]
        bg = rank * G + fv[2]
        out[0, j] = fv[0]
        out[1, j] = rank
        out[2, j] = bg
        out[3, j] = bg * B + fv[3]
        out[4, j] = fv[4]
    return out


def engine_inputs(requests: np.ndarray, spec: MemorySpec) -> tuple:
    """Split lines into transactions (HBM: 64 B -> addr, addr+32), decode, flatten node ids."""
    k = spec.requests_per_line
    tx = spec.org.tx_bytes
    addr = np.asarray(requests["addr"], np.uint64)
    write = np.asarray(requests["write"], bool)
    if k > 1:
        offs = np.arange(k, dtype=np.uint64) * np.uint64(tx)
        addr = (addr[:, None] + offs[None, :]).ravel()
        write = np.repeat(write, k)
    o = spec.org
    if addr.size and int(addr.max()) >= spec.capacity_bytes:
        decode_address(addr, spec)  # raises the TraceError naming the address
    segs = [(FIELDS.index(f), nbits, shift) for f, nbits, shift in _segments(spec) if nbits]
    seg = np.array(segs, np.int64).reshape(-1, 3)
    nodes = _decode_nodes(
        addr,
        np.uint64(log2_exact(tx)),
        seg[:, 0].copy(),
        seg[:, 1].astype(np.uint64),
        seg[:, 2].copy(),
        o.ranks,
        o.bankgroups,
        o.banks,
    )
    channel, rank, bg, bank, row, key = nodes
    if requests.dtype.names is not None and "arrival" in requests.dtype.names:
        arrival = np.repeat(np.asarray(requests["arrival"], np.int64), k)
        if arrival.size and (np.diff(arrival) < 0).any():
            raise TraceError("request arrival cycles must be non-decreasing")
    else:
        arrival = np.zeros(len(addr), np.int64)
    return (channel, rank, bg, bank, row, write.astype(np.int8), key, arrival)


def run_engine(
    inputs: tuple, spec: MemorySpec, *, drain: bool = True, jump: bool = True, log_size: int = 0
):
    o, c = spec.org, spec.controller
    tab_i, nxt, lat, win = _table_arrays(
        spec.standard, tuple(sorted(spec.timing.items())), spec.bus_level
    )
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
    log = np.full((log_size, 5), -1, np.int64)
    out = engine.simulate(*inputs, params, wm, tab_i, nxt, lat, win, log)
    return (*out, log) if log_size else out


def _counts(cnt: np.ndarray) -> dict[str, int]:
    d = {name: int(cnt[i]) for i, name in enumerate(COMMANDS)}
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
    inputs = engine_inputs(requests, spec)
    status, cycles, clk_end, snap, final, arrive, depart, done, fwd, active, _ = run_engine(
        inputs, spec, drain=drain
    )
    if status != 0:
        raise NmpError(f"the controller deadlocked at cycle {clk_end} (no command can ever issue)")
    n = len(inputs[0])
    is_w = inputs[5].astype(bool)
    cycles = int(cycles)
    E = engine
    # Ramulator's avg_read_latency at `cycles`: reads whose data returned by then (forwarded
    # ones with latency 1), over the RD commands issued by then.
    rd_mask = (~is_w) & (depart >= 0) & (depart <= cycles)
    snap_counts = _counts(snap)
    lat_sum = int((depart[rd_mask] - arrive[rd_mask]).sum())
    at_cycles = {
        "cmd_counts": snap_counts,
        "row_hits": int(snap[E.C_HIT_R] + snap[E.C_HIT_W]),
        "row_misses": int(snap[E.C_MISS_R] + snap[E.C_MISS_W]),
        "row_conflicts": int(snap[E.C_CONF_R] + snap[E.C_CONF_W]),
        "avg_read_latency_cycles": lat_sum / snap_counts["RD"] if snap_counts["RD"] else 0.0,
    }
    cnt = final if drain else snap
    counts = _counts(cnt)
    if drain:
        served = (~is_w) & (depart >= 0)
        avg_lat = float((depart[served] - arrive[served]).mean()) if served.any() else 0.0
    else:
        avg_lat = at_cycles["avg_read_latency_cycles"]
    drained_cycles = int(max(done.max(initial=0), cycles)) if drain else cycles
    energy = command_energy_pj(spec, counts, drained_cycles, float(active.sum()))
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
        lines=len(requests),
        requests=n,
        reads=int((~is_w).sum()),
        writes=int(is_w.sum()),
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
        active_cycles=int(active.sum()),
        timeline={"arrive": arrive, "done": done} if timeline else None,
    )
