"""Time of one EmbeddingBag kernel: latency-bound (Little's law) vs bandwidth-bound.

Latency bound. A warp keeps ``m`` row loads in flight (:mod:`nmp.gpu.kernel`); each load's
latency is that of the level that served it (L1 hit, L2 hit, HBM: from the cache simulation) plus
the index load that precedes it (an L1 hit, and one line miss to HBM per ``line/index`` lookups:
the index stream is sequential). By Little's law a warp then retires ``m / latency`` lookups per
cycle, so its time is ``sum(latencies) / m``; a block lasts as long as its slowest warp, and blocks
are list-scheduled onto the ``SMs x blocks_per_SM`` slots in launch order (the hardware block
scheduler refills a slot as soon as it frees), which captures the tail of the last partial wave.

Bandwidth bounds. HBM: bytes fetched / (peak x efficiency), the efficiency of random sector
fetches calibrated on the nmp.memory DRAM engine (:mod:`nmp.gpu.hbm`); L2: sectors served /
L2 bandwidth; L1 likewise per SM; instruction issue: warp instructions / (SMs x schedulers).

Kernel time = max(latency bound, bandwidth bounds). Stall breakdown (sums to the kernel time):
the latency-bound time with perfect packing split by where the latency went (``index_load``,
``l1_hit``, ``l2_hit``, ``hbm_latency``), ``tail`` (the makespan beyond perfect packing), and the
excess of the binding bandwidth bound over the latency bound (``hbm_bandwidth``,
``l2_bandwidth``, ``l1_bandwidth``, ``issue``). ``pin_prefetch`` (the per-table pinning
pre-kernel) is added by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba as nb
import numpy as np

STALL_KEYS = (
    "index_load",
    "l1_hit",
    "l2_hit",
    "hbm_latency",
    "tail",
    "hbm_bandwidth",
    "l2_bandwidth",
    "l1_bandwidth",
    "issue",
    "pin_prefetch",
)


@nb.njit(cache=True)
def list_schedule(block_cycles: np.ndarray, slots: int) -> float:
    """Makespan of blocks started in order on the earliest free of ``slots`` slots."""
    free = np.zeros(slots, dtype=np.float64)
    end = 0.0
    for b in range(block_cycles.shape[0]):
        s = np.argmin(free)
        free[s] += block_cycles[b]
        if free[s] > end:
            end = free[s]
    return end


@dataclass
class KernelTiming:
    t_ns: float
    t_latency_ns: float
    bounds_ns: dict[str, float]
    stall_ns: dict[str, float] = field(default_factory=dict)
    bound: str = "latency"


def kernel_timing(
    *,
    warp_lat_cycles: np.ndarray,
    warp_units: np.ndarray,
    level_cycles: dict[str, float],
    index_cycles_per_unit: float,
    loads_in_flight: int,
    warps_per_block: int,
    slots: int,
    cycle_ns: float,
    bounds_ns: dict[str, float],
) -> KernelTiming:
    """Combine per-warp load latencies with the bandwidth bounds (see the module docstring).

    ``warp_lat_cycles``: per warp, the summed latency of its row loads (cycles);
    ``level_cycles``: total row-load latency attributed to ``l1_hit``, ``l2_hit``,
    ``hbm_latency`` over all warps (for the breakdown).
    """
    m = float(loads_in_flight)
    warp_cycles = (warp_lat_cycles + warp_units * index_cycles_per_unit) / m
    block_cycles = warp_cycles.reshape(-1, warps_per_block).max(axis=1)
    makespan = list_schedule(np.ascontiguousarray(block_cycles), slots)
    packed = float(block_cycles.sum()) / slots
    t_lat = makespan * cycle_ns
    t = max([t_lat, *bounds_ns.values()])
    stall = dict.fromkeys(STALL_KEYS, 0.0)
    parts = dict(level_cycles)
    parts["index_load"] = float(warp_units.sum()) * index_cycles_per_unit
    total = sum(parts.values())
    packed_ns = min(packed * cycle_ns, t_lat)
    if total > 0:
        for key, value in parts.items():
            stall[key] = packed_ns * value / total
    stall["tail"] = t_lat - packed_ns
    bound = "latency"
    if t > t_lat:
        bound = max(bounds_ns, key=lambda k: bounds_ns[k])
        stall[bound] = t - t_lat
    return KernelTiming(
        t_ns=t, t_latency_ns=t_lat, bounds_ns=dict(bounds_ns), stall_ns=stall, bound=bound
    )
