"""The embedding stage on a GPU: one EmbeddingBag kernel per table, back to back on one stream.

For each table the kernel's real access stream (from the batch's indices) goes through the SMs'
sectored L1s and the L2 (:mod:`nmp.gpu.stream`; one cache per partition where the partitions
cache for their own SMs); L1s are invalidated at every kernel launch, the L2 keeps its content
across kernels. Pinning (:class:`nmp.gpu.spec.PinningSpec`) fills the L2 set-aside with
persisting lines: per table, a pre-kernel prefetches that table's hottest rows with
``evict_last`` (charged), or, with the table laid out hot rows first
(:mod:`nmp.gpu.hot_layout`), an access-policy window over those rows marks ``hitRatio`` of their
lines persisting as the kernel touches them (nothing charged besides the kernel). Each
kernel's time is the fixed point of Little's law on the loaded memory system
(:mod:`nmp.gpu.timing`); the stage's time is their sum.

Traffic besides the rows: the index and offset loads and the ``offset2bag`` stores go through the
L1 and L2 as :mod:`nmp.gpu.index_stream` counts them (their sectors in the hit rates, their waits
in each lookup's chain, their distinct sectors fetched from HBM as 32-B fetches); the pooled output
and ``offset2bag`` are written back at the efficiency of 128-B fetches. The hand-written kernel the
recompiled variants run stores no ``offset2bag`` (:attr:`KernelConfig.stores_offset2bag`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nmp.gpu.cache import CacheState, StampClock
from nmp.gpu.hbm import HbmCalibration, hbm_calibration, with_probe
from nmp.gpu.kernel import KernelConfig, kernel_config
from nmp.gpu.queues import memory_queues, slice_queue  # noqa: F401  (slice_queue: re-exported)
from nmp.gpu.spec import GpuSpec
from nmp.gpu.stage_pinning import StagePinning
from nmp.gpu.stage_table import StageContext, TableRun, kernel_layout, time_table
from nmp.gpu.stream import run_kernel_stream
from nmp.gpu.timing import STALL_KEYS
from nmp.results import OpResult

TABLE_ALIGN_BYTES = 2 * 1024 * 1024  # tables start on 2-MiB (large page) boundaries


@dataclass(frozen=True)
class Latencies:
    """Load-to-use latencies (SM cycles) and the HBM one's DRAM part (ns)."""

    l1_cycles: float
    l2_cycles: float  # a near hit's mean: hit_cycles + the L2's spread
    hbm_cycles: float  # a miss's unloaded mean: fabric + DRAM part + the HBM's spread
    dram_ns: float
    # The exponential part of each level's latency (L1, L2, HBM), whose slowest load a warp
    # waiting for several waits for (nmp.gpu.slowest.max_excess).
    spread_cycles: tuple[float, float, float] = (0.0, 0.0, 0.0)


def latencies(gpu: GpuSpec, cal: HbmCalibration) -> Latencies:
    cycle = gpu.sm.cycle_ns
    l2_spread, hbm_spread = gpu.l2.latency_spread_ns / cycle, gpu.hbm.latency_spread_ns / cycle
    hbm_ns = gpu.hbm.fabric_latency_ns + cal.dram_latency_ns
    return Latencies(
        l1_cycles=gpu.l1.hit_cycles,
        l2_cycles=gpu.l2.hit_cycles + l2_spread,
        hbm_cycles=hbm_ns / cycle + hbm_spread,
        dram_ns=cal.dram_latency_ns,
        spread_cycles=(0.0, l2_spread, hbm_spread),
    )


def table_bases(batch, elem_bytes: list[int]) -> list[int]:
    bases, addr = [], 0
    for t, lookups in enumerate(batch.tables):
        bases.append(addr)
        size = lookups.num_rows * lookups.dim * elem_bytes[t]
        addr += -(-size // TABLE_ALIGN_BYTES) * TABLE_ALIGN_BYTES
    return bases


def embedding_stage(
    gpu: GpuSpec, batch, *, elem_bytes: list[int] | None = None, pin_profile=None
) -> OpResult:
    """Model ``batch`` (a :class:`nmp.workload.LookupBatch`) on ``gpu`` (its ``variant``).

    ``elem_bytes`` per table (default 4: fp32); ``pin_profile`` is the batch whose access counts
    choose the pinned rows (default: ``batch`` itself).
    """
    cfg = kernel_config(gpu)
    cal = with_probe(hbm_calibration(gpu.hbm), gpu.hbm)
    lat = latencies(gpu, cal)
    queues = memory_queues(
        gpu, cal, hbm_unloaded_ns=lat.hbm_cycles * gpu.sm.cycle_ns, l2_hit_cycles=lat.l2_cycles
    )
    ctx = StageContext(gpu, cfg, cal, lat, queues)
    elem_bytes = elem_bytes or [4] * len(batch.tables)
    row_bytes = [lk.dim * elem_bytes[t] for t, lk in enumerate(batch.tables)]
    bases = table_bases(batch, elem_bytes)
    l1, l2 = _caches(gpu)
    clock = StampClock()
    k = gpu.sim.line_sample
    profile = pin_profile if pin_profile is not None else batch
    pinning = StagePinning(gpu, cal, profile, bases, row_bytes, l2, clock, k)
    stage = _StageTotals()
    for t, lookups in enumerate(batch.tables):
        layout = kernel_layout(gpu, cfg, row_bytes[t], elem_bytes[t], lookups.dim, bases[t])
        l1.reset()  # L1 is invalidated at each kernel launch
        pre_bytes, pre_ns, overlap_bytes = pinning.before_table(t)
        policy, indices = pinning.table_policy(t, lookups)
        ks, _ = run_kernel_stream(
            indices, lookups.offsets, layout, l1, l2, sample=k, clock=clock, policy=policy
        )
        pinning.after_table()
        run = time_table(ctx, t, lookups, layout, ks, elem_bytes[t], pre_ns, overlap_bytes)
        stage.add(run, pre_bytes)
    return _result(
        gpu, cfg, cal, lat, batch, stage.t_ns, stage.totals, stage.stall, stage.level_units,
        stage.tables, pinning.info, stage.loaded(gpu, queues),
    )  # fmt: skip


def _caches(gpu: GpuSpec) -> tuple[CacheState, CacheState]:
    """Empty L1s (one per SM) and L2 caches (one per partition that caches for its own SMs).
    Under line sampling each L1 keeps 1/k of its sets (see SimSpec); the L2 keeps all of its
    sets and only the sampled ones see traffic."""
    l1c, l2c, k = gpu.l1, gpu.l2, gpu.sim.line_sample
    l1 = CacheState.empty(
        gpu.sm.count, l1c.sets // k, l1c.ways, hashed=False, sectors_per_line=l1c.sectors_per_line
    )
    parts = l2c.caches
    l2 = CacheState.empty(
        parts, l2c.sets // parts, l2c.ways, hashed=True, sectors_per_line=l2c.sectors_per_line
    )
    return l1, l2


class _StageTotals:
    """The stage's sums over its tables' kernels (:class:`nmp.gpu.stage_table.TableRun`)."""

    def __init__(self) -> None:
        self.totals = dict.fromkeys(
            (
                "l1_sectors",
                "l1_sector_hits",
                "l2_sectors",
                "l2_sector_hits",
                "hbm_sectors",
                "hbm_stream_bytes",
                "units",
                "instructions",
                "hbm_fetches",
                "spill_l1_sectors",
            ),
            0.0,
        )
        self.stall = dict.fromkeys(STALL_KEYS, 0.0)
        self.level_units = np.zeros(3)
        self.tables: list[dict[str, Any]] = []
        self.t_ns = 0.0
        self._util_weighted = 0.0
        self._hbm_latency_weighted = 0.0
        self._mlp: list[float] = []
        self._far_shares: list[float] = []

    def add(self, run: TableRun, pre_bytes: float) -> None:
        """``run``'s sums, and ``pre_bytes`` a pre-kernel fetched before it (HBM traffic)."""
        kt, totals = run.timing, self.totals
        totals["hbm_stream_bytes"] += pre_bytes  # (first: the order the sum was taken in)
        self.level_units += run.units_by_level
        self._far_shares.append(run.far_share)
        self._mlp.append(kt.mlp)
        self._util_weighted += kt.hbm_utilization * kt.t_ns
        self._hbm_latency_weighted += kt.hbm_latency_cycles * kt.t_ns
        totals["spill_l1_sectors"] += run.spill_l1_sectors
        self.t_ns += kt.t_ns + run.pre_ns
        self.stall["pin_prefetch"] += run.pre_ns
        for key, value in kt.stall_ns.items():
            self.stall[key] += value
        totals["l1_sectors"] += run.l1_sectors
        totals["l1_sector_hits"] += run.l1_sector_hits
        totals["hbm_fetches"] += run.hbm_fetches
        totals["l2_sectors"] += run.l2_sectors
        totals["l2_sector_hits"] += run.l2_sector_hits
        totals["hbm_sectors"] += run.hbm_sectors
        totals["hbm_stream_bytes"] += run.stream_bytes
        totals["units"] += run.units
        totals["instructions"] += run.instructions
        self.tables.append(run.summary)

    def loaded(self, gpu: GpuSpec, queues) -> dict[str, Any]:
        """The loaded memory system over the kernels' time (the pre-kernels' left out)."""
        kernels_ns = sum(x["t_ns"] for x in self.tables) - self.stall["pin_prefetch"]
        return {
            "hbm_utilization_in_kernels": self._util_weighted / kernels_ns if kernels_ns else 0.0,
            "hbm_latency_ns_in_kernels": self._hbm_latency_weighted / kernels_ns * gpu.sm.cycle_ns
            if kernels_ns
            else 0.0,
            "mlp_loads_per_warp": float(np.mean(self._mlp)) if self._mlp else 0.0,
            "l2_far_hit_share": float(np.mean(self._far_shares)) if self._far_shares else 0.0,
            "curve_source": queues.source,
        }


def _result(
    gpu,
    cfg: KernelConfig,
    cal,
    lat: Latencies,
    batch,
    t_ns,
    totals,
    stall,
    level_units,
    tables_out,
    pin_info,
    loaded,
) -> OpResult:
    sector = gpu.l2.sector_bytes
    hbm_bytes = totals["hbm_sectors"] * sector + totals["hbm_stream_bytes"]
    l2_bytes = totals["l2_sectors"] * sector
    l1_bytes = totals["l1_sectors"] * sector
    e = gpu.energy
    fetches = totals["hbm_fetches"]
    fetch = totals["hbm_sectors"] * sector / fetches if fetches else float(gpu.l2.line_bytes)
    energy = {
        "hbm_dynamic": totals["hbm_sectors"] * cal.pj_per_sector_for(fetch)
        + totals["hbm_stream_bytes"] / sector * cal.pj_per_sector_for(128.0),
        "hbm_background": cal.background_w_per_channel * gpu.hbm.channels * t_ns * 1e3,
        "l1": (totals["l1_sectors"] + totals["spill_l1_sectors"]) * e.l1_pj_per_sector,
        "l2": totals["l2_sectors"] * e.l2_pj_per_sector,
        "sm_instructions": totals["instructions"] * e.pj_per_instruction,
        "static": e.static_power_w * t_ns * 1e3,
    }
    achieved = hbm_bytes / t_ns if t_ns > 0 else 0.0
    units = totals["units"]
    breakdown = {
        "variant": gpu.variant,
        "kernel": {
            "regs_per_thread": cfg.regs_per_thread,
            "regs_build": gpu.kernel.regs_build or "ASSUMED: no build named",
            "blocks_per_sm": cfg.blocks_per_sm,
            "warps_per_sm": cfg.resident_warps_per_sm,
            "occupancy": cfg.occupancy,
            "occupancy_limited_by": cfg.limited_by,
            "regs_wanted": cfg.regs_wanted,
            "spilled_regs": cfg.spilled_regs,
            "spill_l1_bytes": totals["spill_l1_sectors"] * sector,
            "loads_in_flight_per_warp": cfg.loads_in_flight,
            "unroll": cfg.unroll,
            "loads_in_flight_build": gpu.kernel.loads_in_flight_build or "ASSUMED: no build named",
            "stores_offset2bag": cfg.stores_offset2bag,
            "mlp_lines_in_flight": cfg.mlp_lines(gpu.sm.count),
            "mlp_loads_per_warp": loaded["mlp_loads_per_warp"],
            "waves_per_table": gpu.kernel.grid_blocks / (gpu.sm.count * cfg.blocks_per_sm),
        },
        "l2_far_hit_share": loaded["l2_far_hit_share"],
        "l1_hit_rate": totals["l1_sector_hits"] / totals["l1_sectors"]
        if totals["l1_sectors"]
        else 0.0,
        "l2_hit_rate": totals["l2_sector_hits"] / totals["l2_sectors"]
        if totals["l2_sectors"]
        else 0.0,
        "loads_served_by": {
            "l1": level_units[0] / units if units else 0.0,
            "l2": level_units[1] / units if units else 0.0,
            "hbm": level_units[2] / units if units else 0.0,
        },
        "hbm_bytes": hbm_bytes,
        "l2_bytes": l2_bytes,
        "l1_bytes": l1_bytes,
        "achieved_hbm_bandwidth_gbps": achieved,
        "hbm_peak_bandwidth_gbps": gpu.hbm.peak_bandwidth_gbps,
        "hbm_bandwidth_utilization": achieved / gpu.hbm.peak_bandwidth_gbps,
        "hbm_utilization_in_kernels": loaded["hbm_utilization_in_kernels"],
        "hbm_latency_loaded_ns": loaded["hbm_latency_ns_in_kernels"],
        "hbm_queueing": gpu.hbm.queueing,
        "l2_caches": gpu.l2.caches,
        "stall_ns": stall,
        "stall_fraction": {k: (v / t_ns if t_ns else 0.0) for k, v in stall.items()},
        "tables_bound_by": {
            b: sum(1 for x in tables_out if x["bound"] == b)
            for b in sorted({x["bound"] for x in tables_out})
        },
        "per_table_ns": [x["t_ns"] for x in tables_out],
        "latency_ns": {
            "l1_hit": lat.l1_cycles * gpu.sm.cycle_ns,
            "l2_hit": lat.l2_cycles * gpu.sm.cycle_ns,
            "hbm": lat.hbm_cycles * gpu.sm.cycle_ns,
            "hbm_dram_part": lat.dram_ns,
        },
        "hbm_efficiency_random": cal.efficiency,
        "hbm_calibrated_against": cal.calibrated_against,
        "loaded_latency_curve": loaded["curve_source"],
        "pinning": pin_info,
        "line_sample": gpu.sim.line_sample,
    }
    return OpResult(
        cycles=t_ns / gpu.sm.cycle_ns,
        t_ns=t_ns,
        energy_pj=energy,
        bytes_by_level={"hbm": hbm_bytes, "l2": l2_bytes, "l1": l1_bytes},
        breakdown=breakdown,
    )
