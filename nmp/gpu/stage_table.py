"""One table's kernel in the embedding stage (:mod:`nmp.gpu.model`): its traffic, read from the
cache simulation's sampled counts (:mod:`nmp.gpu.stream`) and the index stream
(:mod:`nmp.gpu.index_stream`), and its time, the fixed point of Little's law on the loaded
memory system (:mod:`nmp.gpu.timing`) under its bandwidth and issue bounds."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from nmp.gpu.index_stream import IndexTraffic, index_traffic
from nmp.gpu.kernel import KernelConfig
from nmp.gpu.queues import MemoryQueues
from nmp.gpu.spec import GpuSpec
from nmp.gpu.stream import LEVEL_HBM, LEVEL_L1, LEVEL_L2, KernelLayout
from nmp.gpu.timing import KernelTiming, LoadPrices, kernel_timing


def far_hit_share(gpu: GpuSpec, counts: dict[str, int]) -> float:
    """Share of a kernel's L2 line hits served by the far partition (0 without
    ``l2.far_hit_cycles`` or with per-partition copies, "near", where every hit is near).

    Chosen rule, from pointer chases on Hopper (one SM, random 128-B lines; M. Dewing,
    AI_kernels latency data, H100 SXM and GH200): the L2 hit latency holds at its near value
    while the footprint is under about half the L2 (one of GH100's two partitions) and steps to
    the far value between half and all of it. So a hit on a line whose reuse distance exceeds
    half the L2, i.e. older than the most recent half of its set's ways, is a far hit."""
    if not gpu.l2.far_hit_cycles or gpu.l2.caches > 1:
        return 0.0
    hits = counts["l2_line_hits"]
    return counts["l2_far_line_hits"] / hits if hits else 0.0


def kernel_layout(gpu: GpuSpec, cfg: KernelConfig, row_bytes: int, elem_bytes: int, dim: int,
                  base_bytes: int) -> KernelLayout:  # fmt: skip
    """How a table's kernel lays its blocks and warps over the rows on ``gpu``."""
    return KernelLayout(
        row_bytes=row_bytes,
        elem_bytes=elem_bytes,
        dim=dim,
        base_bytes=base_bytes,
        block_y=gpu.kernel.block_y,
        grid_blocks=gpu.kernel.grid_blocks,
        sms=gpu.sm.count,
        blocks_per_sm=cfg.blocks_per_sm,
        line_bytes=gpu.l1.line_bytes,
        sector_bytes=gpu.l1.sector_bytes,
    )


@dataclass(frozen=True)
class TableRun:
    """A table's kernel, timed: its timing and the traffic the stage's totals add up."""

    timing: KernelTiming
    pre_ns: float  # the pre-kernel charged before it
    far_share: float
    units_by_level: np.ndarray  # loads served by L1, L2, HBM (sampled ones spread by the mix)
    l1_sectors: float  # rows' and index sectors
    l1_sector_hits: float
    l2_sectors: float
    l2_sector_hits: float
    hbm_sectors: float
    hbm_fetches: float
    stream_bytes: float  # index reads and output / offset2bag writes
    units: float
    instructions: float
    spill_l1_sectors: float
    summary: dict[str, Any]  # the breakdown's per-table record


@dataclass(frozen=True)
class StageContext:
    """What every table's kernel of a stage shares."""

    gpu: GpuSpec
    cfg: KernelConfig
    cal: Any  # HbmCalibration, with the probe applied
    lat: Any  # nmp.gpu.model.Latencies
    queues: MemoryQueues


def time_table(ctx: StageContext, t: int, lookups, layout: KernelLayout, ks, elem_bytes: int,
               pre_ns: float, overlap_bytes: float) -> TableRun:  # fmt: skip
    """Table ``t``'s kernel from its stream's counts ``ks``; ``overlap_bytes`` a pre-kernel's
    fetches sharing HBM with it, ``pre_ns`` the one charged before it."""
    gpu, cfg, cal = ctx.gpu, ctx.cfg, ctx.cal
    l1c, l2c, sm = gpu.l1, gpu.l2, gpu.sm
    sector = l2c.sector_bytes
    c = ks.counts
    # Rates of the sampled lines stand for every request (all of them when k = 1).
    l1_rate = c["l1_sector_hits"] / c["l1_sectors"] if c["l1_sectors"] else 0.0
    l2_rate = c["l2_sector_hits"] / c["l2_sectors"] if c["l2_sectors"] else 0.0
    l1_sectors = float(c["l1_sectors_all"])
    l2_sectors = l1_sectors * (1.0 - l1_rate)
    hbm_sectors = l2_sectors * (1.0 - l2_rate)
    missed = c["l2_lines"] - c["l2_line_hits"]
    sampled_hbm_sectors = c["l2_sectors"] - c["l2_sector_hits"]
    fetch_bytes = sampled_hbm_sectors * sector / missed if missed else float(sector)
    lv = ks.level_units.astype(float)
    known = lv[LEVEL_L1] + lv[LEVEL_L2] + lv[LEVEL_HBM]
    share = lv[:3] / known if known else np.array([1.0, 0.0, 0.0])
    # Unsampled loads draw their levels from the sampled mix (multinomial per warp, fixed
    # seed): the warps keep their spread, which the slowest-warp-per-block rule needs.
    warp_levels = ks.warp_levels[:, :3].astype(float)
    if ks.warp_levels[:, 3].any():
        rng = np.random.default_rng(t)
        warp_levels += rng.multinomial(ks.warp_levels[:, 3], share)
    units_lv = lv[:3] + lv[3] * share
    eff_rows = cal.efficiency_for(fetch_bytes)
    idx = index_traffic(
        lookups.offsets,
        layout.chunks_per_bag,
        gpu.kernel.index_bytes,
        l1c.sector_bytes,
        l2c.fetch_bytes,
        stores_offset2bag=cfg.stores_offset2bag,
    )
    row_bytes = layout.row_bytes
    # Index/offset reads are L2-miss-sized fetches; output and offset2bag write-backs whole
    # lines.
    write_bytes = idx.hbm_write_bytes + lookups.batch * row_bytes
    stream_bytes = idx.hbm_read_bytes + write_bytes
    peak = gpu.hbm.peak_bandwidth_gbps
    line_eff = cal.efficiency_for(l2c.line_bytes)
    stream_ns = idx.hbm_read_bytes / (peak * cal.efficiency_for(l2c.fetch_bytes)) + write_bytes / (
        peak * line_eff
    )
    row_l2_sectors = l2_sectors
    # Row line requests reaching the L2: each load's line that missed a sector in the L1.
    row_requests = c["l1_lines_all"] * c["l2_lines"] / c["l1_lines"] if c["l1_lines"] else 0.0
    l1_sectors += idx.l1_requests
    l2_sectors += idx.l2_requests
    t_hbm_rows = hbm_sectors * sector / (peak * eff_rows)
    units = float(warp_levels.sum())
    instructions = units * cfg.instructions_per_lookup
    # A spilled register's reload: 32 threads x 4 B = 4 sectors of local memory, from L1.
    spill_sectors = units * cfg.spill_loads_per_lookup * (32 * 4 // sector)
    sectors_per_load = max(1, -(-(32 * layout.elem_bytes) // sector))
    clk_ghz = sm.clock_mhz / 1000.0
    bounds = {
        "hbm_bandwidth": t_hbm_rows + stream_ns + overlap_bytes / (peak * line_eff),
        "l2_bandwidth": l2_sectors * sector / (l2c.bytes_per_cycle * clk_ghz),
        "l1_bandwidth": (l1_sectors + spill_sectors)
        * sector
        / (l1c.bytes_per_cycle * sm.count * clk_ghz),
        "issue": instructions / (sm.count * sm.schedulers * clk_ghz),
    }
    far = far_hit_share(gpu, c)
    kt = kernel_timing(
        warp_levels=warp_levels,
        prices=_prices(ctx, far, idx),
        mlp=cfg.mlp_for(sectors_per_load),
        # The L1's per-SM miss entries are shared by the warps a wave really runs.
        mlp_at=functools.partial(cfg.mlp_for, sectors_per_load),
        sms=sm.count,
        warps_per_block=cfg.warps_per_block,
        slots=sm.count * cfg.blocks_per_sm,
        cycle_ns=sm.cycle_ns,
        hbm_bytes=hbm_sectors * sector + stream_bytes + overlap_bytes,
        peak_gbps=peak,
        saturation=cal.saturation,
        queueing_ns=ctx.queues.queueing_ns,
        bounds_ns=bounds,
        slices=ctx.queues.slices(
            bytes=l2_sectors * sector + lookups.batch * row_bytes + overlap_bytes,
            requests=row_requests + idx.l2_requests,
        ),
    )
    return TableRun(
        timing=kt,
        pre_ns=pre_ns,
        far_share=far,
        units_by_level=units_lv,
        l1_sectors=l1_sectors,
        l1_sector_hits=(l1_sectors - idx.l1_requests) * l1_rate + idx.l1_hits,
        l2_sectors=l2_sectors,
        l2_sector_hits=row_l2_sectors * l2_rate + idx.l2_hits,
        hbm_sectors=hbm_sectors,
        hbm_fetches=hbm_sectors * sector / fetch_bytes,
        stream_bytes=stream_bytes,
        units=units,
        instructions=instructions,
        spill_l1_sectors=spill_sectors,
        summary={
            "t_ns": kt.t_ns + pre_ns,
            "t_latency_ns": kt.t_latency_ns,
            "bound": kt.bound,
            "bounds_ns": kt.bounds_ns,
            "hbm_efficiency": eff_rows,
            "hbm_fetch_bytes": fetch_bytes,
            "hbm_utilization": kt.hbm_utilization,
            "hbm_latency_ns": kt.hbm_latency_cycles * sm.cycle_ns,
        },
    )


def _prices(ctx: StageContext, far: float, idx: IndexTraffic) -> LoadPrices:
    """A load's price at each level for this kernel (its far L2 hits, its index loads)."""
    gpu, cfg, lat = ctx.gpu, ctx.cfg, ctx.lat
    return LoadPrices(
        l1_cycles=lat.l1_cycles,
        l2_cycles=lat.l2_cycles + far * (gpu.l2.far_hit_cycles - lat.l2_cycles),
        hbm_unloaded_cycles=lat.hbm_cycles,
        spread_cycles=lat.spread_cycles,
        waits_for_slowest=gpu.sm.waits_for_slowest_load,
        index_hbm_share=idx.hbm_share,
        index_l2_share=idx.l2_share,
        spill_cycles=lat.l1_cycles if cfg.spill_loads_per_lookup > 0 else 0.0,
        unroll=cfg.unroll,
        index_batch=cfg.index_batch,
    )
