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

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from nmp.gpu.cache import CacheState, StampClock
from nmp.gpu.hbm import HbmCalibration, hbm_calibration, with_probe
from nmp.gpu.hot_layout import (
    check_window,
    hot_first_order,
    remap_indices,
    window_bytes,
    window_hit_ratio,
)
from nmp.gpu.index_stream import index_traffic
from nmp.gpu.kernel import KernelConfig, kernel_config
from nmp.gpu.queues import memory_queues, slice_queue  # noqa: F401  (slice_queue: re-exported)
from nmp.gpu.spec import GpuSpec
from nmp.gpu.stream import (
    LEVEL_HBM,
    LEVEL_L1,
    LEVEL_L2,
    KernelLayout,
    L2Policy,
    run_kernel_stream,
)
from nmp.gpu.timing import STALL_KEYS, LoadPrices, kernel_timing
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


def table_bases(batch, elem_bytes: list[int]) -> list[int]:
    bases, addr = [], 0
    for t, lookups in enumerate(batch.tables):
        bases.append(addr)
        size = lookups.num_rows * lookups.dim * elem_bytes[t]
        addr += -(-size // TABLE_ALIGN_BYTES) * TABLE_ALIGN_BYTES
    return bases


def hot_rows(profile, k: int, tables: list[int] | None = None) -> list[tuple[int, np.ndarray]]:
    """The ``k`` most accessed rows over ``tables`` (default all) of ``profile``:
    [(table, rows)], hottest first within a table; ties go to the lower (table, row)."""
    tables = list(range(len(profile.tables))) if tables is None else tables
    counts, owner, rows = [], [], []
    for t in tables:
        lookups = profile.tables[t]
        c = np.bincount(lookups.indices, minlength=lookups.num_rows)
        nz = np.flatnonzero(c)
        counts.append(c[nz])
        rows.append(nz)
        owner.append(np.full(nz.shape[0], t, dtype=np.int64))
    if not counts:
        return []
    c = np.concatenate(counts)
    tb = np.concatenate(owner)
    rw = np.concatenate(rows)
    if k < c.size:
        # The k-th largest count; rows above it all go in, ties fill up in (table, row) order
        # (the arrays are in that order). Avoids sorting millions of counts.
        kth = np.partition(c, c.size - k)[c.size - k]
        above = np.flatnonzero(c > kth)
        ties = np.flatnonzero(c == kth)[: k - above.size]
        keep = np.concatenate([above, ties])
        c, tb, rw = c[keep], tb[keep], rw[keep]
    order = np.lexsort((rw, tb, -c))[:k]
    return [(t, rw[order][tb[order] == t]) for t in tables]


def pin_lines(pinned: list[tuple[int, np.ndarray]], bases, row_bytes, line_bytes) -> np.ndarray:
    """Line addresses of the pinned rows (every line a row touches)."""
    out = []
    for t, rows in pinned:
        if rows.size == 0:
            continue
        start = bases[t] + rows * row_bytes[t]
        first = start // line_bytes
        last = (start + row_bytes[t] - 1) // line_bytes
        n = int((last - first).max()) + 1
        lines = first[:, None] + np.arange(n)[None, :]
        keep = lines <= last[:, None]
        out.append(lines[keep])
    return np.concatenate(out) if out else np.empty(0, dtype=np.int64)


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
    n_tables = len(batch.tables)
    elem_bytes = elem_bytes or [4] * n_tables
    row_bytes = [lk.dim * elem_bytes[t] for t, lk in enumerate(batch.tables)]
    bases = table_bases(batch, elem_bytes)
    l1c, l2c, sm = gpu.l1, gpu.l2, gpu.sm
    k = gpu.sim.line_sample
    # Under line sampling each L1 keeps 1/k of its sets (see SimSpec); the L2 keeps all of its
    # sets and only the sampled ones see traffic.
    l1 = CacheState.empty(
        sm.count, l1c.sets // k, l1c.ways, hashed=False, sectors_per_line=l1c.sectors_per_line
    )
    parts = l2c.caches
    l2 = CacheState.empty(
        parts, l2c.sets // parts, l2c.ways, hashed=True, sectors_per_line=l2c.sectors_per_line
    )
    clock = StampClock()
    pinning = gpu.pinning
    carve = int(math.floor(pinning.set_aside_fraction * l2c.ways)) if gpu.uses_pinning else 0
    set_aside_bytes = carve * l2c.sets * l2c.line_bytes  # in each of the ``parts`` caches
    pin_info: dict[str, Any] = {
        "mechanism": pinning.mechanism,
        "scope": pinning.scope,
        "set_aside_bytes": set_aside_bytes // parts if gpu.uses_pinning else 0,
        "set_aside_ways": carve,
        "rows": 0,
        "lines": 0,
        "lines_persisting": 0,
        "bytes": 0,
        "prefetch_ns": 0.0,
        "prefetch_charged": False,
        "hit_ratio": 0.0,
        "window_bytes": 0,
    }
    # HBM efficiency of line fetches: the pinning pre-kernel, the index and output streams.
    line_eff = cal.efficiency_for(l2c.line_bytes)
    profile = pin_profile if pin_profile is not None else batch
    prefetching = gpu.uses_pin_prefetch and pinning.rows > 0
    per_table = gpu.uses_pinning and pinning.per_table

    def pin_efficiency(tables: list[int] | None) -> float:
        """HBM efficiency of the pre-kernel's fetches: whole rows of consecutive lines."""
        sizes = [row_bytes[t] for t in (tables if tables is not None else range(n_tables))]
        return cal.efficiency_for(float(np.mean(sizes)))

    def pin(tables: list[int] | None) -> float:
        """The pre-kernel over the hottest rows of ``tables``; returns the bytes it fetches."""
        chosen = hot_rows(profile, pinning.rows, tables)
        lines = pin_lines(chosen, bases, row_bytes, l2c.line_bytes)
        # Coldest first: where a set's share of the set-aside overflows, the hottest stay.
        persisting, fetched = l2.persist(lines[::-1], carve, clock, sample=k)
        pin_bytes = fetched * l2c.sector_bytes / parts  # sampled: every cache gets each line
        pin_info["rows"] += int(sum(r.size for _, r in chosen))
        pin_info["lines"] += int(lines.size)
        pin_info["lines_persisting"] = persisting
        pin_info["bytes"] += int(pin_bytes)
        pin_info["prefetch_ns"] += pin_bytes / (
            gpu.hbm.peak_bandwidth_gbps * pin_efficiency(tables)
        )
        return pin_bytes

    if prefetching and not per_table:
        # Pinned once; the rows stay across batches, so the pre-kernel is reported, not charged.
        pin(None)
    pin_info["prefetch_charged"] = prefetching and per_table
    pin_info["prefetch_overlaps"] = prefetching and per_table and pinning.prefetch_overlaps

    clk_ghz = sm.clock_mhz / 1000.0
    peak = gpu.hbm.peak_bandwidth_gbps
    sector = l2c.sector_bytes
    totals = dict.fromkeys(
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
    util_weighted = 0.0
    hbm_lat_weighted = 0.0
    mlp_used = []
    far_shares: list[float] = []
    stall = dict.fromkeys(STALL_KEYS, 0.0)
    level_units = np.zeros(3)
    tables_out: list[dict[str, Any]] = []
    t_total = 0.0
    for t, lookups in enumerate(batch.tables):
        layout = KernelLayout(
            row_bytes=row_bytes[t],
            elem_bytes=elem_bytes[t],
            dim=lookups.dim,
            base_bytes=bases[t],
            block_y=gpu.kernel.block_y,
            grid_blocks=gpu.kernel.grid_blocks,
            sms=sm.count,
            blocks_per_sm=cfg.blocks_per_sm,
            line_bytes=l1c.line_bytes,
            sector_bytes=l1c.sector_bytes,
        )
        l1.reset()  # L1 is invalidated at each kernel launch
        pre_ns = 0.0
        overlap_bytes = 0.0
        policy = L2Policy(parts=parts, carve=carve)
        if per_table:
            l2.reset_persisting()  # cudaCtxResetPersistingL2Cache before the next table
        if prefetching and per_table:
            pre_bytes = pin([t])
            pre_ns = pre_bytes / (gpu.hbm.peak_bandwidth_gbps * pin_efficiency([t]))
            totals["hbm_stream_bytes"] += pre_bytes
            if pinning.prefetch_overlaps:
                # Fire-and-forget: the fetches share HBM with this kernel instead of preceding it.
                overlap_bytes, pre_ns = pre_bytes, 0.0
        indices = lookups.indices
        if gpu.uses_hot_first_layout:
            # The table laid out hot rows first (nmp.gpu.hot_layout); the window, if any, below.
            ((_, hot),) = hot_rows(profile, pinning.rows, [t])
            indices = remap_indices(indices, hot_first_order(lookups.num_rows, hot))
        if gpu.uses_access_window:
            nbytes = window_bytes(hot.shape[0], row_bytes[t])
            check_window(nbytes, pinning.max_window_bytes, f"table {t}")
            lo = bases[t] // l2c.line_bytes
            ratio = window_hit_ratio(set_aside_bytes / parts, nbytes, pinning.hit_ratio)
            policy = L2Policy(
                parts=parts,
                window_lo=lo,
                window_hi=lo + -(-nbytes // l2c.line_bytes),
                hit_ratio=ratio,
                carve=carve,
            )
            pin_info["hit_ratio"] = ratio
            pin_info["window_bytes"] = nbytes
            pin_info["rows"] = int(hot.shape[0])
            pin_info["lines"] = -(-nbytes // l2c.line_bytes)
        ks, _ = run_kernel_stream(
            indices, lookups.offsets, layout, l1, l2, sample=k, clock=clock, policy=policy
        )
        if gpu.uses_access_window:
            pin_info["lines_persisting"] = int(np.count_nonzero(l2.pinned)) * k
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
        level_units += units_lv
        eff_rows = cal.efficiency_for(fetch_bytes)
        idx = index_traffic(
            lookups.offsets,
            layout.chunks_per_bag,
            gpu.kernel.index_bytes,
            l1c.sector_bytes,
            l2c.fetch_bytes,
            stores_offset2bag=cfg.stores_offset2bag,
        )
        # Index/offset reads are L2-miss-sized fetches; output and offset2bag write-backs whole
        # lines.
        write_bytes = idx.hbm_write_bytes + lookups.batch * row_bytes[t]
        stream_bytes = idx.hbm_read_bytes + write_bytes
        stream_ns = idx.hbm_read_bytes / (
            peak * cal.efficiency_for(l2c.fetch_bytes)
        ) + write_bytes / (peak * line_eff)
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
        slice_bytes = 32 * elem_bytes[t]
        sectors_per_load = max(1, -(-slice_bytes // sector))
        mlp = cfg.mlp_for(sectors_per_load)
        bounds = {
            "hbm_bandwidth": t_hbm_rows + stream_ns + overlap_bytes / (peak * line_eff),
            "l2_bandwidth": l2_sectors * sector / (l2c.bytes_per_cycle * clk_ghz),
            "l1_bandwidth": (l1_sectors + spill_sectors)
            * sector
            / (l1c.bytes_per_cycle * sm.count * clk_ghz),
            "issue": instructions / (sm.count * sm.schedulers * clk_ghz),
        }
        far = far_hit_share(gpu, c)
        far_shares.append(far)
        prices = LoadPrices(
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
        kt = kernel_timing(
            warp_levels=warp_levels,
            prices=prices,
            mlp=mlp,
            # The L1's per-SM miss entries are shared by the warps a wave really runs.
            mlp_at=functools.partial(cfg.mlp_for, sectors_per_load),
            sms=sm.count,
            warps_per_block=cfg.warps_per_block,
            slots=sm.count * cfg.blocks_per_sm,
            cycle_ns=sm.cycle_ns,
            hbm_bytes=hbm_sectors * sector + stream_bytes + overlap_bytes,
            peak_gbps=peak,
            saturation=cal.saturation,
            queueing_ns=queues.queueing_ns,
            bounds_ns=bounds,
            slices=queues.slices(
                bytes=l2_sectors * sector + lookups.batch * row_bytes[t] + overlap_bytes,
                requests=row_requests + idx.l2_requests,
            ),
        )
        mlp_used.append(kt.mlp)
        util_weighted += kt.hbm_utilization * kt.t_ns
        hbm_lat_weighted += kt.hbm_latency_cycles * kt.t_ns
        totals["spill_l1_sectors"] += spill_sectors
        t_total += kt.t_ns + pre_ns
        stall["pin_prefetch"] += pre_ns
        for key, value in kt.stall_ns.items():
            stall[key] += value
        totals["l1_sectors"] += l1_sectors
        totals["l1_sector_hits"] += (l1_sectors - idx.l1_requests) * l1_rate + idx.l1_hits
        totals["hbm_fetches"] += hbm_sectors * sector / fetch_bytes
        totals["l2_sectors"] += l2_sectors
        totals["l2_sector_hits"] += row_l2_sectors * l2_rate + idx.l2_hits
        totals["hbm_sectors"] += hbm_sectors
        totals["hbm_stream_bytes"] += stream_bytes
        totals["units"] += units
        totals["instructions"] += instructions
        tables_out.append(
            {
                "t_ns": kt.t_ns + pre_ns,
                "t_latency_ns": kt.t_latency_ns,
                "bound": kt.bound,
                "bounds_ns": kt.bounds_ns,
                "hbm_efficiency": eff_rows,
                "hbm_fetch_bytes": fetch_bytes,
                "hbm_utilization": kt.hbm_utilization,
                "hbm_latency_ns": kt.hbm_latency_cycles * sm.cycle_ns,
            }
        )
    kernels_ns = sum(x["t_ns"] for x in tables_out) - stall["pin_prefetch"]
    loaded = {
        "hbm_utilization_in_kernels": util_weighted / kernels_ns if kernels_ns else 0.0,
        "hbm_latency_ns_in_kernels": hbm_lat_weighted / kernels_ns * sm.cycle_ns
        if kernels_ns
        else 0.0,
        "mlp_loads_per_warp": float(np.mean(mlp_used)) if mlp_used else 0.0,
        "l2_far_hit_share": float(np.mean(far_shares)) if far_shares else 0.0,
        "curve_source": queues.source,
    }
    return _result(
        gpu, cfg, cal, lat, batch, t_total, totals, stall, level_units, tables_out, pin_info, loaded
    )


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
