"""Time of one EmbeddingBag kernel: Little's law on a loaded memory system.

Latency. A warp keeps ``m`` row loads in flight (:meth:`nmp.gpu.kernel.KernelConfig.mlp_for`:
what the variant asks, bounded by the L1's outstanding-sector entries per warp and per SM). Each
load's latency is that of the level that served it (L1 hit, L2 hit, HBM: the cache simulation
says which) plus what the index load before it adds: the stock loop issues a lookup's index load
right behind the previous row load (SASS), so only the part of the index's wait (an L1 hit, or the
sector in flight once per ``sector / index`` lookups: :mod:`nmp.gpu.index_stream`) beyond that row's
latency is left (:meth:`LoadPrices.index_exposed`). By Little's law the warp retires ``m /
latency`` lookups per cycle, so its time is ``sum(latencies) / m``, plus a spilled kernel's reloads
(an L1 hit per lookup, in the chain, not overlapped). A block lasts as long as its slowest warp;
blocks are list-scheduled onto the ``SMs x blocks_per_SM`` slots in launch order (the hardware
block scheduler refills a slot as soon as it frees), which captures the tail of the last wave.

Waves. Block ``b`` runs in wave ``b // slots``; each wave is solved on its own with the loads it
holds (:func:`kernel_timing`), so a partial last wave (1024 blocks on 792 slots leave 232) puts
its lighter load on the memory system and sees its shorter queues, instead of the full waves'.
Its warps per SM are the ones it really runs (busy warps over the SMs its busy blocks occupy),
and where the L1's per-SM miss entries bound the loads in flight (``mlp_at``), they are shared
by those warps only, not by the resident limit's.
The waves are not run in series: every block, priced at its wave's loaded latency, goes into one
list schedule, so a next-wave block starts on the first slot that frees.

Waits. A warp that keeps ``m`` loads in flight waits for the slowest of them: each wait costs
the mean load plus :func:`nmp.gpu.slowest.max_excess` over the wave's mix of levels (with
``LoadPrices.waits_for_slowest``; else Little's law on the mean load).

Load. An HBM miss's latency is the unloaded one plus the queueing delay at the kernel's HBM
utilization ``u = bytes / (time x peak)``, from the DRAM engine's replays at offered loads
(:meth:`nmp.gpu.hbm.HbmCalibration.queueing_ns`; it diverges at the saturated efficiency of random
fetches). Time and latency depend on each other: the kernel time is the fixed point ``T =
max(makespan(latency(u(T))), other bounds)``, found by bisection (the makespan falls as T grows, so
there is one). More loads in flight thus buy time only until the queues they fill eat it back.

L2 slices: every L2 request (hit or miss) waits at a slice (:class:`SliceQueue`, M/D/1 on the
busier of the slices' bytes and requests: ``l2.requests_per_ns``), so a kernel whose requests
near the slices' rate is held there whatever its loads in flight.

Other bounds: L2 sectors / L2 bandwidth; L1 sectors (rows, spills) / L1 bandwidth per SM;
instruction issue: warp instructions / (SMs x schedulers). With ``hbm.queueing = false`` the HBM
latency stays unloaded and HBM bytes / (peak x random-fetch efficiency) is a hard bound instead.

Stall breakdown (sums to the kernel time): the latency-bound time with perfect packing split by
where the latency went (``index_load``, ``l1_hit``, ``l2_hit``, ``hbm_latency`` (unloaded),
``hbm_queueing``, ``spill``), ``tail`` (the makespan beyond perfect packing), and the excess of the
binding bandwidth bound over the latency bound (``hbm_bandwidth``, ``l2_bandwidth``,
``l1_bandwidth``, ``issue``). ``pin_prefetch`` (the per-table pinning pre-kernel) is added by the
caller.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from nmp.gpu.slowest import max_excess
from nmp.jit import njit

STALL_KEYS = (
    "index_load",
    "l1_hit",
    "l2_hit",
    "hbm_latency",
    "hbm_queueing",
    "l2_queueing",
    "spill",
    "load_spread",
    "tail",
    "hbm_bandwidth",
    "l2_bandwidth",
    "l1_bandwidth",
    "issue",
    "pin_prefetch",
)
_BISECTIONS = 60
_LABEL_TOLERANCE = 1e-3  # relative: well above the bisection's 1e-6


@njit(cache=True)
def list_schedule(block_cycles: np.ndarray, slots: int) -> float:
    """Makespan of blocks started in order on the earliest free of ``slots`` slots (a binary
    min-heap of the slots' free times: the root is the earliest)."""
    n = block_cycles.shape[0]
    heap = np.zeros(min(slots, max(n, 1)), dtype=np.float64)
    size = heap.shape[0]
    end = 0.0
    for b in range(n):
        t = heap[0] + block_cycles[b]
        if t > end:
            end = t
        # Replace the root and sift it down.
        i = 0
        while True:
            c = 2 * i + 1
            if c >= size:
                break
            if c + 1 < size and heap[c + 1] < heap[c]:
                c += 1
            if heap[c] >= t:
                break
            heap[i] = heap[c]
            i = c
        heap[i] = t
    return end


@njit(cache=True)
def block_max(warp: np.ndarray, spill: np.ndarray, warps_per_block: int) -> np.ndarray:
    """Each block's slowest warp: ``(warp + spill).reshape(-1, warps_per_block).max(axis=1)``
    in one pass, without the temporaries (the same values: a max is exact, a NaN propagates)."""
    blocks = warp.shape[0] // warps_per_block
    out = np.empty(blocks, dtype=np.float64)
    for b in range(blocks):
        i = b * warps_per_block
        top = warp[i] + spill[i]
        for j in range(i + 1, i + warps_per_block):
            v = warp[j] + spill[j]
            if v > top or v != v:
                top = v
            if top != top:
                break
        out[b] = top
    return out


@dataclass
class KernelTiming:
    t_ns: float
    t_latency_ns: float
    bounds_ns: dict[str, float]
    stall_ns: dict[str, float] = field(default_factory=dict)
    bound: str = "latency"
    hbm_utilization: float = 0.0
    hbm_latency_cycles: float = 0.0
    waves: int = 1
    mlp: float = 1.0  # loads in flight per warp, the waves' mean weighted by their loads
    # Each block's time (ns) at this wave's solved latencies, stretched by a binding bandwidth
    # bound (its share of the wave's excess): what the block scheduler interleaves across waves.
    block_ns: np.ndarray = field(default_factory=lambda: np.zeros(0))


@dataclass(frozen=True)
class LoadPrices:
    """Cycles of each part of a lookup's chain (SM clock)."""

    l1_cycles: float
    l2_cycles: float
    hbm_unloaded_cycles: float
    index_hbm_share: float  # per lookup: index loads waiting for HBM (nmp.gpu.index_stream)
    spill_cycles: float  # reload latency per lookup in the chain (0 without spills)
    index_l2_share: float = 0.0  # per lookup: index loads waiting for an L2 hit
    # The stock loop's unrolling as built (1: the one-row rule of index_exposed; U > 1: the
    # index waits of an unrolled body, index_in_body).
    unroll: int = 1
    # The hand-written prefetch kernel's body (1 + prefetch distance lookups; 1: none): its index
    # loads are issued together after the previous body's rows were summed (index_in_batch).
    index_batch: int = 1
    # Each level's exponential part (L1, L2, HBM): a warp waiting for its loads in flight
    # together waits for the slowest of them (max_excess).
    spread_cycles: tuple[float, float, float] = (0.0, 0.0, 0.0)
    waits_for_slowest: bool = False  # False: Little's law on the mean load (no max_excess)

    def index_per_lookup(self, row_cycles: np.ndarray, mlp: float) -> np.ndarray:
        """Index cycles a lookup adds to its warp's chain, per level of its row load: the
        one-row rule (:meth:`index_exposed` over the rows in flight) or, for an unrolled stock
        body, :meth:`index_in_body` per lookup."""
        if self.unroll > 1:
            return self.index_in_body(row_cycles) / self.unroll
        if self.index_batch > 1:
            return np.full(len(row_cycles), self.index_in_batch(row_cycles) / self.index_batch)
        return self.index_exposed(row_cycles) / mlp

    def index_in_batch(self, row_cycles: np.ndarray) -> float:
        """Index wait of one body of the hand-written prefetch kernel (``B = index_batch``
        lookups; nmp.gpu.kernels_real: ``v[j] = weight[input[emb + j] * dim + f]`` for j < B,
        then the sums): the B index loads leave together once the previous body is summed, so
        the body waits for the slowest, a sector miss (one per 32-B sector of 8-B indices) if
        the body holds one, else an L1 hit."""
        miss = self.index_l2_share + self.index_hbm_share
        p_miss = min(1.0, miss * self.index_batch)
        rows = np.asarray(row_cycles, dtype=np.float64)
        m = (self.index_l2_share * rows[1] + self.index_hbm_share * rows[2]) / miss if miss else 0.0
        return p_miss * m + (1.0 - p_miss) * self.l1_cycles

    def index_in_body(self, row_cycles: np.ndarray) -> np.ndarray:
        """Index wait of one unrolled body of ``U = unroll`` lookups, per level of the body's
        first row. The stock loop's SASS (nvcc 13.0, sm_90; docs/gpu-model.md) issues index
        ``j + 1`` right behind row ``j`` (in order: the row needs index ``j``), row ``U - 1``
        after row 0 has been used, and the next body's first index after the last row: a body
        lasts ``i_0 + max(i_1 + ... + i_(U-1), r_0) + r_(U-1)``. Its index wait beyond the two
        rows is ``i_0 + max(0, i_1 + ... + i_(U-1) - r_0)``. The index loads are L1 hits but
        for the sector misses (``index_l2_share + index_hbm_share`` per lookup, about one a
        body for 8-B indices in 32-B sectors), each at a uniformly random position of the body
        (bags start anywhere in a sector)."""
        u = self.unroll
        h = self.l1_cycles
        rows = np.asarray(row_cycles, dtype=np.float64)
        miss = self.index_l2_share + self.index_hbm_share
        p_miss = min(1.0, miss * u)
        weights = (
            np.array([self.index_l2_share, self.index_hbm_share]) / miss
            if miss > 0
            else np.zeros(2)
        )
        out = np.empty(rows.shape[0])
        for k, r in enumerate(rows):
            none = h + max(0.0, (u - 1) * h - r)
            first = np.array([m + max(0.0, (u - 1) * h - r) for m in rows[1:3]])
            later = np.array([h + max(0.0, (u - 2) * h + m - r) for m in rows[1:3]])
            one = float(weights @ (first + (u - 1) * later)) / u
            out[k] = p_miss * one + (1.0 - p_miss) * none
        return out

    def index_exposed(self, row_cycles: np.ndarray) -> np.ndarray:
        """Index wait left in a lookup's chain, per level of the row load before it
        (``row_cycles`` = its L1 / L2 / HBM latency, the index's levels priced alike).

        The stock loop's SASS (nvcc 13.0, sm_90, 40 registers as Nsight Compute reads on the
        H200; docs/gpu-model.md) issues the next lookup's index load right behind the row load
        it follows, without waiting for that row: the index's latency runs under the row's, and
        only what exceeds it is left: ``E[max(0, index - row)]`` over the index's levels
        (:mod:`nmp.gpu.index_stream`'s shares), independent of the row's level."""
        l1_share = 1.0 - self.index_hbm_share - self.index_l2_share
        shares = np.array([l1_share, self.index_l2_share, self.index_hbm_share])
        idx = np.asarray(row_cycles, dtype=np.float64)
        return np.array([float(shares @ np.maximum(0.0, idx - r)) for r in idx])


@dataclass(frozen=True)
class SliceQueue:
    """The L2 slices behind the crossbar as a queue every L2 request passes (hits and misses):
    ``bytes`` requested from the L2 during the kernel, the slices' total ``peak_bytes_per_ns``,
    and the cycles one slice takes to serve one request (``service_cycles``)."""

    bytes: float
    peak_bytes_per_ns: float
    service_cycles: float
    requests: float = 0.0
    requests_per_ns: float = math.inf  # the slices' request rate (all of them together)
    request_service_cycles: float = 0.0  # one request at one slice
    # A measured wait (SM cycles) against the slices' utilization (the busier of bytes and
    # requests), from a recorded latency probe (nmp.gpu.loaded_curve); empty: M/D/1. Below its
    # first point the first wait holds; beyond its last point (the probe's highest throughput)
    # the wait is infinite: a measured curve says nothing past itself.
    wait_curve: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())

    def utilization(self, t_ns: float) -> float:
        """The busier of the slices' two resources (bytes, requests) at time ``t_ns``."""
        u_bytes = self.bytes / (t_ns * self.peak_bytes_per_ns) if t_ns > 0 else math.inf
        return max(u_bytes, self.request_utilization(t_ns))

    def request_utilization(self, t_ns: float) -> float:
        """Share of the slices' request rate the kernel's requests take at time ``t_ns``."""
        return self.requests / (t_ns * self.requests_per_ns) if t_ns > 0 else math.inf

    def min_time_ns(self) -> float:
        """The slices' bound: every byte and every request served at their peak rates."""
        return max(self.bytes / self.peak_bytes_per_ns, self.requests / self.requests_per_ns)

    def wait_cycles(self, t_ns: float) -> float:
        """Mean wait at a slice (M/D/1: u / (2 (1 - u)) services) at the kernel's L2 load, on
        the busier of the slices' two resources (bytes, requests); or the measured
        ``wait_curve`` at that utilization."""
        xs, ys = self.wait_curve
        if xs:
            u = self.utilization(t_ns)
            return math.inf if u > xs[-1] else float(np.interp(u, xs, ys))
        u_bytes = self.bytes / (t_ns * self.peak_bytes_per_ns) if t_ns > 0 else math.inf
        u, service = max(
            (u_bytes, self.service_cycles),
            (self.request_utilization(t_ns), self.request_service_cycles),
        )
        if u >= 1.0:
            return math.inf
        return service * u / (2.0 * (1.0 - u))


def kernel_timing(
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
    mlp_at: Callable[[float], float] | None = None,
    sms: int = 0,
) -> KernelTiming:
    """Kernel time, wave by wave: the blocks are launched in order onto ``slots`` slots (SMs x
    blocks per SM), so block ``b`` runs in wave ``b // slots``; each wave is its own fixed point
    of Little's law (:func:`wave_timing`) with the memory traffic it holds (its share of the
    loads), so a partial last wave runs at the lighter load, and lower latency, it puts on the
    memory system. Times, stalls and bounds add up over the waves. ``mlp_at(warps_per_sm)``
    (with ``sms``): the loads in flight per warp when an SM runs that many warps (the L1's
    per-SM miss entries), evaluated per wave at the warps it really runs; else ``mlp``."""
    levels = np.ascontiguousarray(warp_levels, dtype=np.float64)
    blocks = levels.shape[0] // warps_per_block
    total_units = float(levels.sum())

    def wave_mlp(part: np.ndarray) -> float:
        if mlp_at is None or sms <= 0:
            return mlp
        busy = part.sum(axis=1) > 0
        busy_blocks = int(busy.reshape(-1, warps_per_block).any(axis=1).sum())
        if busy_blocks == 0:
            return mlp
        return mlp_at(float(busy.sum()) / min(sms, busy_blocks))

    def wave(part: np.ndarray, share: float) -> KernelTiming:
        """One wave's fixed point with ``share`` of the kernel's traffic and bounds."""
        return wave_timing(
            warp_levels=part,
            prices=prices,
            mlp=wave_mlp(part),
            warps_per_block=warps_per_block,
            slots=slots,
            cycle_ns=cycle_ns,
            hbm_bytes=hbm_bytes * share,
            peak_gbps=peak_gbps,
            saturation=saturation,
            queueing_ns=queueing_ns,
            bounds_ns={k: v * share for k, v in bounds_ns.items()},
            slices=replace(slices, bytes=slices.bytes * share, requests=slices.requests * share)
            if slices
            else None,
        )

    if blocks <= slots or total_units <= 0:
        return wave(levels, 1.0)
    waves, shares = [], []
    for first in range(0, blocks, slots):
        part = levels[first * warps_per_block : (first + slots) * warps_per_block]
        shares.append(float(part.sum()) / total_units)
        waves.append(wave(part, shares[-1]))
    # The block scheduler starts a block of the next wave on the first slot that frees, not when
    # the whole wave has drained: one list schedule of every block, each at its own wave's loaded
    # latency (the waves' fixed points), gives the kernel's makespan.
    t_waves = sum(w.t_ns for w in waves)
    t = min(t_waves, list_schedule(np.concatenate([w.block_ns for w in waves]), slots))
    stall = {k: sum(w.stall_ns[k] for w in waves) for k in STALL_KEYS}
    saved = t_waves - t  # the barrier between waves, which the waves' tails held
    stall["tail"] -= saved
    if stall["tail"] < 0.0:
        rest = t_waves - saved - stall["tail"]
        scale = t / rest if rest > 0 else 0.0
        stall = {k: (0.0 if k == "tail" else v * scale) for k, v in stall.items()}
    longest = max(waves, key=lambda w: w.t_ns)
    return KernelTiming(
        t_ns=t,
        t_latency_ns=min(t, sum(w.t_latency_ns for w in waves)),
        bounds_ns=dict(bounds_ns),
        stall_ns=stall,
        bound=longest.bound,
        hbm_utilization=hbm_bytes / (t * peak_gbps) if t > 0 else 0.0,
        hbm_latency_cycles=sum(w.hbm_latency_cycles * w.t_ns for w in waves) / t_waves
        if t_waves
        else 0.0,
        waves=len(waves),
        mlp=sum(w.mlp * f for w, f in zip(waves, shares, strict=True)),
    )


def wave_timing(
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
    spill = units * p.spill_cycles  # (the same in every evaluation of the search)
    fused = levels.shape[0] % warps_per_block == 0  # (else reshape's error, as before)
    # The search evaluates a row of latencies more than once (a bracket's end, the solution's
    # stalls): each row's blocks and makespan are kept for this wave, keyed by the row's bits.
    blocks_of: dict[bytes, np.ndarray] = {}
    span_of: dict[bytes, float] = {}
    excess_of: dict[bytes, float] = {}

    def wait_excess(row: np.ndarray) -> float:
        """A row wait's excess over the mean load: the slowest of ``mlp`` loads, drawn from the
        wave's mix of levels (its totals)."""
        if not p.waits_for_slowest:
            return 0.0
        key = row.tobytes()
        if key not in excess_of:
            excess_of[key] = max_excess(row, p.spread_cycles, totals, mlp)
        return excess_of[key]

    def row_of(hbm_cycles: float, l2_wait: float) -> np.ndarray:
        return np.array([p.l1_cycles, p.l2_cycles + l2_wait, hbm_cycles])

    def row_blocks(row: np.ndarray, key: bytes) -> np.ndarray:
        if key not in blocks_of:
            per_load = (row + wait_excess(row)) / mlp + p.index_per_lookup(row, mlp)
            if fused:
                blocks_of[key] = block_max(levels @ per_load, spill, warps_per_block)
            else:
                warp = levels @ per_load + spill
                blocks_of[key] = warp.reshape(-1, warps_per_block).max(axis=1)
        return blocks_of[key]

    def block_cycles(hbm_cycles: float, l2_wait: float = 0.0) -> np.ndarray:
        """Each block's cycles: its slowest warp's chain of loads over ``mlp`` in flight, each
        wait for the slowest of them (a fresh array: callers may scale it in place)."""
        row = row_of(hbm_cycles, l2_wait)
        return row_blocks(row, row.tobytes()).copy()

    def makespan_cycles(hbm_cycles: float, l2_wait: float = 0.0) -> float:
        row = row_of(hbm_cycles, l2_wait)
        key = row.tobytes()
        if key not in span_of:
            span_of[key] = list_schedule(np.ascontiguousarray(row_blocks(row, key)), slots)
        return span_of[key]

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
