"""The GPU model's wave timing as it was before its search was made faster (nmp.gpu.timing's
``wave_timing`` and nmp.gpu.slowest's ``max_excess``, copied verbatim): every evaluation of the
fixed-point search recomputed, blocks' maxima by numpy, the integral's grid by ``np.union1d``.
The fast path must give the same bits (tests/gpu/test_timing_reference.py)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from nmp.gpu.timing import (
    _BISECTIONS,
    _LABEL_TOLERANCE,
    STALL_KEYS,
    KernelTiming,
    LoadPrices,
    SliceQueue,
    list_schedule,
)

_GRID = 4096


def reference_max_excess(
    means: np.ndarray, spreads: tuple[float, ...] | np.ndarray, shares: np.ndarray, m: float
) -> float:
    """How much longer a warp waits for the slowest of ``m`` loads than for one, on average:
    ``E[max of m] - E[one]`` over loads drawn from the levels' mixture (``shares``), each level's
    latency its fixed part ``mean - spread`` plus an exponential wait of mean ``spread`` (0: a
    fixed latency). ``E[max of m] = integral of 1 - F(t)^m dt`` (``m`` real: a warp's loads in
    flight per wait, 1 or fewer: no excess). One level of spread ``s`` gives ``s (H_m - 1)``."""
    p = np.asarray(shares, dtype=np.float64)
    total = p.sum()
    if m <= 1.0 or total <= 0.0:
        return 0.0
    p = p / total
    mu = np.asarray(means, dtype=np.float64)
    sd = np.asarray(spreads, dtype=np.float64)
    live = p > 0
    if not np.any(sd[live] > 0) and np.ptp(mu[live]) == 0.0:
        return 0.0
    fixed = np.maximum(mu - sd, 0.0)
    top = float(np.max((fixed + 40.0 * sd)[live]))
    t = np.union1d(np.linspace(0.0, top, _GRID + 1), fixed[live])
    cdf = np.zeros_like(t)
    for level in np.flatnonzero(live):
        if sd[level] > 0:
            part = -np.expm1(-np.maximum(t - fixed[level], 0.0) / sd[level])
        else:
            part = (t >= fixed[level]).astype(np.float64)
        cdf += p[level] * part
    tail = 1.0 - np.minimum(cdf, 1.0) ** m
    expected_max = float(np.sum(0.5 * (tail[1:] + tail[:-1]) * np.diff(t)))
    return max(0.0, expected_max - float(p @ mu))


def reference_wave_timing(
    *,
    warp_levels: np.ndarray,
    prices: LoadPrices,
    mlp: float,
    warps_per_block: int,
    slots: int,
    cycle_ns: float,
    hbm_bytes: float,
    peak_gbps: float,
    saturation: float,
    queueing_ns: Callable[[float], float] | None,
    bounds_ns: dict[str, float],
    slices: SliceQueue | None = None,
) -> KernelTiming:
    """Kernel time from per-warp loads by level (``warp_levels[w] = (L1, L2, HBM)`` units) and
    the bandwidth ``bounds_ns`` (see the module docstring). ``queueing_ns`` None: unloaded
    latencies and a hard HBM bandwidth bound (``bounds_ns["hbm_bandwidth"]``); ``slices``: the
    L2 slices' queue, whose wait every L2 hit and miss adds (with ``queueing_ns`` only)."""
    levels = np.ascontiguousarray(warp_levels, dtype=np.float64)
    units = levels.sum(axis=1)
    totals = levels.sum(axis=0)
    p = prices

    def wait_excess(row: np.ndarray) -> float:
        """A row wait's excess over the mean load: the slowest of ``mlp`` loads, drawn from the
        wave's mix of levels (its totals)."""
        if not p.waits_for_slowest:
            return 0.0
        return reference_max_excess(row, p.spread_cycles, totals, mlp)

    def block_cycles(hbm_cycles: float, l2_wait: float = 0.0) -> np.ndarray:
        """Each block's cycles: its slowest warp's chain of loads over ``mlp`` in flight, each
        wait for the slowest of them."""
        row = np.array([p.l1_cycles, p.l2_cycles + l2_wait, hbm_cycles])
        per_load = (row + wait_excess(row)) / mlp + p.index_per_lookup(row, mlp)
        warp = levels @ per_load + units * p.spill_cycles
        return warp.reshape(-1, warps_per_block).max(axis=1)

    def makespan_cycles(hbm_cycles: float, l2_wait: float = 0.0) -> float:
        return list_schedule(np.ascontiguousarray(block_cycles(hbm_cycles, l2_wait)), slots)

    def queue_cycles(t_ns: float) -> tuple[float, float]:
        """(HBM queueing, L2 slice wait) in cycles at kernel time ``t_ns``; a miss waits in
        both, a hit in the slice only."""
        assert queueing_ns is not None  # called only where it is given (the else below)
        u = hbm_bytes / (t_ns * peak_gbps) if t_ns > 0 else math.inf
        w2 = slices.wait_cycles(t_ns) if slices is not None else 0.0
        return queueing_ns(u) / cycle_ns + w2, w2

    other = {k: v for k, v in bounds_ns.items() if k != "hbm_bandwidth"}
    floor = max(other.values(), default=0.0)
    w2 = 0.0
    if queueing_ns is None:
        q = 0.0
        t_lat = makespan_cycles(p.hbm_unloaded_cycles) * cycle_ns
        t = max(t_lat, floor, bounds_ns.get("hbm_bandwidth", 0.0))
    else:

        def excess(t_ns: float) -> float:
            qc, wc = queue_cycles(t_ns)
            if math.isinf(qc):
                return math.inf
            return max(makespan_cycles(p.hbm_unloaded_cycles + qc, wc) * cycle_ns, floor) - t_ns

        lo = max(floor, hbm_bytes / (peak_gbps * saturation)) if hbm_bytes > 0 else floor
        if slices is not None:
            lo = max(lo, slices.min_time_ns())
        hi = max(lo, makespan_cycles(p.hbm_unloaded_cycles) * cycle_ns, 1e-9)
        while excess(hi) > 0:
            lo, hi = hi, hi * 2.0
        if excess(lo) <= 0:
            hi = lo
        for _ in range(_BISECTIONS):
            if hi - lo <= 1e-6 * hi:
                break
            mid = 0.5 * (lo + hi)
            if excess(mid) > 0:
                lo = mid
            else:
                hi = mid
        t = hi
        q, w2 = queue_cycles(t)
        t_lat = min(makespan_cycles(p.hbm_unloaded_cycles + q, w2) * cycle_ns, t)
    hbm_cycles = p.hbm_unloaded_cycles + q
    u = hbm_bytes / (t * peak_gbps) if t > 0 else 0.0
    row_loaded = np.array([p.l1_cycles, p.l2_cycles + w2, hbm_cycles])
    parts = {
        "l1_hit": totals[0] * p.l1_cycles / mlp,
        "l2_hit": totals[1] * p.l2_cycles / mlp,
        "l2_queueing": (totals[1] + totals[2]) * w2 / mlp,
        "hbm_latency": totals[2] * p.hbm_unloaded_cycles / mlp,
        "hbm_queueing": totals[2] * (q - w2) / mlp,
        "index_load": float(totals @ p.index_per_lookup(row_loaded, mlp)),
        "spill": units.sum() * p.spill_cycles,
        "load_spread": totals.sum() * wait_excess(row_loaded) / mlp,
    }
    warp = sum(parts.values())
    # Perfect packing: every slot busy with the mean block (the slowest warp of each block).
    block_sum = float(block_cycles(hbm_cycles, w2).sum())
    packed_ns = min(block_sum / slots * cycle_ns, t_lat) if levels.shape[0] else 0.0
    stall = dict.fromkeys(STALL_KEYS, 0.0)
    if warp > 0:
        for key, value in parts.items():
            stall[key] = packed_ns * value / warp
    stall["tail"] = t_lat - packed_ns
    all_bounds = dict(bounds_ns)
    # The label names what sets the time: a bandwidth bound only when it exceeds the latency-bound
    # time by more than the bisection's tolerance (1e-6 of t; a smaller excess is the solver's
    # rounding, not a bound), else "latency", or "hbm_bandwidth" where the loaded latency is set
    # by the HBM queue near its asymptote (u >= 90 % of the random-fetch saturation), or
    # "l2_requests" where it is set by the slices' request queue (>= 90 % of its rate).
    bound = "latency"
    if t > t_lat * (1 + _LABEL_TOLERANCE):
        candidates = all_bounds if queueing_ns is None else other
        bound = max(candidates, key=lambda k: candidates[k])
        stall[bound] += t - t_lat
    else:
        t_lat = t
        stall["tail"] = t_lat - packed_ns
        if queueing_ns is not None and u >= 0.9 * saturation:
            bound = "hbm_bandwidth"
        elif queueing_ns is not None and slices and slices.request_utilization(t) >= 0.9:
            bound = "l2_requests"  # the slices' request queue near its asymptote
    blocks = block_cycles(hbm_cycles, w2) * cycle_ns
    span = list_schedule(np.ascontiguousarray(blocks), slots) if blocks.size else 0.0
    return KernelTiming(
        t_ns=t,
        t_latency_ns=t_lat,
        bounds_ns=all_bounds,
        stall_ns=stall,
        bound=bound,
        hbm_utilization=u,
        hbm_latency_cycles=hbm_cycles,
        block_ns=blocks * (t / span) if span > 0 else blocks,
        mlp=mlp,
    )
