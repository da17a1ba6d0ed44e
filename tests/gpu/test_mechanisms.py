"""The mechanisms issue #37 put in the GPU model, each one pinned by a test that fails when the
mechanism is taken out: latency under load (HBM queue at the probe's asymptote, L2 slices), the
waves of a partial grid, index loads through the caches, the prefetch depth, pinning's charges,
and the bottleneck label."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nmp.gpu import load_gpu
from nmp.gpu.hbm import hbm_calibration, with_probe
from nmp.gpu.timing import LoadPrices, SliceQueue, kernel_timing

PRICES = LoadPrices(
    l1_cycles=40.0, l2_cycles=291.0, hbm_unloaded_cycles=700.0, index_hbm_share=0.0, spill_cycles=0
)


# Prices with one index sector miss in 4 lookups (1/8 to the L2, 1/8 to HBM): the index
# mechanisms' tests.
INDEX_MISSES = dict(
    l1_cycles=40.0,
    l2_cycles=291.0,
    hbm_unloaded_cycles=700.0,
    index_hbm_share=1 / 8,
    index_l2_share=1 / 8,
    spill_cycles=0.0,
)


def timing(levels, *, slots=8, hbm_bytes=0.0, slices=None, queueing=True, bounds=None):
    cal = with_probe(hbm_calibration(load_gpu("h200").hbm), load_gpu("h200").hbm)
    return kernel_timing(
        warp_levels=np.asarray(levels, dtype=float),
        prices=PRICES,
        mlp=1.0,
        warps_per_block=1,
        slots=slots,
        cycle_ns=1 / 1.98,
        hbm_bytes=hbm_bytes,
        peak_gbps=4800.0,
        saturation=cal.saturation,
        queueing_ns=cal.queueing_ns if queueing else None,
        bounds_ns=bounds or {"l2_bandwidth": 0.0},
        slices=slices,
    )


def test_probe_sets_the_hbm_efficiencies_and_the_queues_asymptote():
    hbm = load_gpu("h200").hbm
    engine = hbm_calibration(hbm)
    cal = with_probe(engine, hbm)
    assert cal.efficiency["32"] == pytest.approx(1128 / 4800)
    assert cal.efficiency["128"] == pytest.approx(3706 / 4800)
    assert cal.saturation == pytest.approx(0.772, abs=1e-3)
    # The queue diverges at the probe's throughput, not the engine's.
    assert math.isfinite(cal.queueing_ns(0.99 * cal.saturation))
    assert math.isinf(engine.queueing_ns(0.99 * cal.saturation))
    # Without a probe the engine's calibration stands.
    assert with_probe(engine, load_gpu("a100-80gb").hbm) is engine


def test_l2_slices_queue_lengthens_hits_with_load():
    q = SliceQueue(bytes=1e6, peak_bytes_per_ns=1e4, service_cycles=3.0)
    assert q.wait_cycles(1e6) < q.wait_cycles(200.0) < q.wait_cycles(110.0)
    assert math.isinf(q.wait_cycles(100.0))
    levels = [[0, 100, 0]] * 8  # L2 hits only
    idle = timing(levels)
    # The same hits with the slices near saturation over the kernel: each hit waits.
    busy = timing(levels, slices=SliceQueue(bytes=1.3e5, peak_bytes_per_ns=10.0, service_cycles=30))
    assert busy.t_ns > idle.t_ns * 1.02
    assert busy.stall_ns["l2_queueing"] > 0.0


def test_partial_last_wave_runs_at_its_own_lighter_load():
    from nmp.gpu.timing import wave_timing

    # 5 one-warp blocks of HBM misses on 4 slots: a full wave and a partial one of 1 block.
    levels = np.array([[0, 0, 100]] * 5, dtype=float)
    args = dict(
        prices=PRICES,
        mlp=1.0,
        warps_per_block=1,
        slots=4,
        cycle_ns=1 / 1.98,
        peak_gbps=4800.0,
        bounds_ns={"l2_bandwidth": 0.0},
    )
    cal = with_probe(hbm_calibration(load_gpu("h200").hbm), load_gpu("h200").hbm)
    # Bytes that load the memory to about 70 % of the probe's 128-B throughput over one wave.
    hbm_bytes = 0.7 * 0.772 * 4800 * 100 * 700 / 1.98 * 1.25
    common = dict(args, hbm_bytes=hbm_bytes, saturation=cal.saturation, queueing_ns=cal.queueing_ns)
    waves = kernel_timing(warp_levels=levels, **common)
    one_pool = wave_timing(warp_levels=levels, **common)
    assert waves.waves == 2
    full = wave_timing(warp_levels=levels[:4], **dict(common, hbm_bytes=hbm_bytes * 0.8))
    last = wave_timing(warp_levels=levels[4:], **dict(common, hbm_bytes=hbm_bytes * 0.2))
    assert waves.t_ns == pytest.approx(full.t_ns + last.t_ns)
    # The lone block of the last wave sees shorter queues than the full wave, and the full
    # wave longer ones than one kernel-wide average load would give it.
    assert last.hbm_latency_cycles < full.hbm_latency_cycles - 20
    assert full.hbm_latency_cycles > one_pool.hbm_latency_cycles + 10
    assert last.t_ns < 0.97 * full.t_ns


def test_index_loads_go_through_l1_and_l2():
    from nmp.gpu.index_stream import index_traffic

    # Two bags of 150 lookups, dim 128 (4 warps per bag), 8-B indices, 32-B sectors.
    offsets = np.array([0, 150, 300])
    tr = index_traffic(offsets, 4, 8, 32, fetch_bytes=64)
    assert tr.l1_requests == 300 * 4 + 2 * 8  # every warp loads every index; offsets per chunk
    # Each bag spans 38 sectors (150 x 8 B = 1200 B from 0, 39 from 1200): the first warp misses.
    assert tr.l1_requests - tr.l1_hits == 38 + 38 + 2
    # 64-B fetches: every other index sector waits for HBM, the next is an L2 hit.
    assert tr.hbm_share == pytest.approx(np.ceil(300 * 8 / 64) / 300)
    assert tr.l2_share == pytest.approx((76 - 38) / 300)
    assert tr.hbm_write_bytes == 300 * 8  # offset2bag
    # In the model: the index sectors (mostly hits) are in the L1 hit rate, as ncu counts it.
    from nmp.gpu import run_design_point

    def run(arch: dict):
        wl = {"num_tables": 1, "batch": 64, "reuse": "random"}
        return run_design_point("h200", "gpu-micro24", overrides={"arch": arch, "workload": wl})

    r = run({})
    assert r.breakdown["l1_hit_rate"] > 0.15
    stall = r.breakdown["stall_ns"]
    # The stock body's first index load waits in full (unroll 4): a real share of the chain.
    assert 0.05 * stall["hbm_latency"] < stall["index_load"] < 0.3 * stall["hbm_latency"]
    # A one-row loop (unroll 1): behind row misses the index waits are hidden (below), yet some
    # are left: L1-served rows.
    stall = run({"kernel.unroll": 1}).breakdown["stall_ns"]
    assert 0.0 < stall["index_load"] < 0.05 * stall["hbm_latency"]


def test_index_load_runs_under_the_previous_row_load():
    # The stock loop's SASS issues the next index load right behind the row load: only the index
    # wait beyond that row's latency is left in the chain.
    p = LoadPrices(**INDEX_MISSES)
    exposed = p.index_exposed(np.array([40.0, 291.0, 700.0]))
    assert exposed[2] == 0.0  # behind a row miss: nothing
    assert exposed[1] == pytest.approx((700 - 291) / 8)  # behind an L2 hit: the HBM index waits
    assert exposed[0] == pytest.approx((291 - 40) / 8 + (700 - 40) / 8)
    # In the kernel's time: 100 L2-hit rows pay 100 x (291 + 409 / 8) cycles, not 100 x (291 +
    # the whole index wait).
    t = kernel_timing(
        warp_levels=np.array([[0.0, 100.0, 0.0]]),
        prices=p,
        mlp=1.0,
        warps_per_block=1,
        slots=1,
        cycle_ns=1.0,
        hbm_bytes=0.0,
        peak_gbps=4800.0,
        saturation=0.77,
        queueing_ns=None,
        bounds_ns={},
    )
    assert t.t_ns == pytest.approx(100 * (291 + 409 / 8))


def test_bound_label_names_what_sets_the_time():
    levels = [[0, 0, 100]] * 8
    # A latency-bound kernel with a small L2 bound is labelled latency (it was labelled by the
    # largest other bound when the bisection stopped a hair above the makespan).
    assert timing(levels, bounds={"l2_bandwidth": 1.0, "issue": 0.5}).bound == "latency"
    # A floor above the latency-bound time binds and names itself.
    assert timing(levels, bounds={"l2_bandwidth": 1e6, "issue": 0.5}).bound == "l2_bandwidth"
    # Near the HBM queue's asymptote the loaded latency is the bandwidth's doing.
    heavy = timing(levels, hbm_bytes=2.0e8)
    assert heavy.hbm_utilization > 0.69 and heavy.bound == "hbm_bandwidth"


def test_prefetch_kernel_keeps_its_lookups_in_flight():
    from nmp.gpu.kernel import kernel_config

    cfg = kernel_config(load_gpu("h200", {"variant": "prefetch"}))
    # The measured 4-lookup prefetch kernel: 32 registers (full occupancy), 4 rows in flight
    # per warp: no per-warp cap of 2 lines cuts it to 2.
    assert cfg.regs_per_thread == 32 and cfg.resident_warps_per_sm == 64
    assert cfg.loads_in_flight == 4 and cfg.mlp_for(4) == 4.0
    # With Accel-Sim's Ampere limit of 8 sectors per warp it would be capped at 2.
    capped = kernel_config(
        load_gpu("h200", {"variant": "prefetch", "sm.outstanding_sectors_per_warp": 8})
    )
    assert capped.mlp_for(4) == 2.0


def test_pinning_pays_its_pre_kernel_before_the_table():
    from nmp.gpu import run_design_point

    wl = {"num_tables": 1, "batch": 256, "reuse": "high"}
    r = run_design_point(
        "h200", "gpu-micro24", overrides={"arch": {"variant": "pinning"}, "workload": wl}
    )
    pin = r.breakdown["pinning"]
    assert pin["prefetch_charged"] and not pin["prefetch_overlaps"]
    # 60K rows of 512 B fetched as whole rows at the probe's 512-B throughput (4,134 GB/s),
    # serialized before the kernel.
    expect_ns = pin["bytes"] / 4134.0
    assert pin["prefetch_ns"] == pytest.approx(expect_ns, rel=1e-6)
    assert r.breakdown["stall_ns"]["pin_prefetch"] == pytest.approx(expect_ns, rel=1e-6)
    assert pin["bytes"] == pytest.approx(pin["rows"] * 512, rel=0.01) and pin["rows"] > 10_000
    # Hopper's L2 is one pool of 60 MiB (the far partition's lines are reachable).
    assert r.breakdown["l2_caches"] == 1


def test_next_wave_starts_on_the_first_free_slot():
    # Three blocks on two slots: the third (second wave) starts when the short first-wave block
    # ends, not when the long one does (the block scheduler refills a freed slot at once).
    levels = np.array([[100.0, 0, 0], [10.0, 0, 0], [50.0, 0, 0]])
    t = kernel_timing(
        warp_levels=levels,
        prices=PRICES,
        mlp=1.0,
        warps_per_block=1,
        slots=2,
        cycle_ns=1.0,
        hbm_bytes=0.0,
        peak_gbps=4800.0,
        saturation=0.77,
        queueing_ns=None,
        bounds_ns={},
    )
    assert t.waves == 2
    assert t.t_ns == pytest.approx(100 * 40.0)  # not 100 x 40 + 50 x 40 (waves in series)
    assert sum(t.stall_ns.values()) == pytest.approx(t.t_ns)


def test_far_partition_prices_old_l2_hits_at_the_far_latency():
    from nmp.gpu import run_design_point

    wl = {"num_tables": 1, "batch": 1024, "reuse": "random"}

    def run(far: float):
        # Little's law on the mean load: the far share's price alone, without the waits for
        # the slowest load, whose mix of levels it also moves.
        arch = {"l2.far_hit_cycles": far, "sm.waits_for_slowest_load": False}
        over = {"arch": arch, "workload": wl}
        return run_design_point("h200", "gpu-micro24", overrides=over)

    sourced, flat = run(520.0), run(0.0)
    share = sourced.breakdown["l2_far_hit_share"]
    # A uniform 256-MB table reuses rows at distances of the whole L2: many hits are old.
    assert 0.2 < share < 0.9
    assert flat.breakdown["l2_far_hit_share"] == 0.0
    # Each L2 hit costs its near mean + share x (520 - that) cycles: the stall on L2 hits grows
    # by about that factor (a little less: the kernel's other stalls share the same makespan).
    gpu = load_gpu("h200")
    near = gpu.l2.hit_cycles + gpu.l2.latency_spread_ns / gpu.sm.cycle_ns
    grow = 1 + share * (520.0 - near) / near
    l2_stall = sourced.breakdown["stall_ns"]["l2_hit"] / flat.breakdown["stall_ns"]["l2_hit"]
    assert l2_stall == pytest.approx(grow, rel=0.05)
    assert sourced.latency_ns > flat.latency_ns


def test_l2_request_rate_bounds_a_kernel_with_many_loads_in_flight():
    # The slices' request queue: no kernel beats requests / rate; its wait diverges there.
    q = SliceQueue(
        bytes=1e3,
        peak_bytes_per_ns=1e4,
        service_cycles=1.0,
        requests=3525.0,
        requests_per_ns=35.25,
        request_service_cycles=6.7,
    )
    assert q.min_time_ns() == pytest.approx(100.0)
    assert math.isinf(q.wait_cycles(100.0))
    # Near the rate the request service (6.7 cycles), not the byte service (1), sets the wait.
    assert q.wait_cycles(125.0) == pytest.approx(6.7 * 0.8 / (2 * 0.2))

    from nmp.gpu import run_design_point

    wl = {"num_tables": 1, "batch": 1024, "reuse": "medium"}

    def run(rate: float):
        # The stock loop recompiled with prefetch (its offset2bag stores are requests too).
        arch = {"variant": "prefetch", "l2.requests_per_ns": rate, "kernel.unroll": 1}
        arch["kernel.handwritten_loads_in_flight"] = 0
        arch["sm.waits_for_slowest_load"] = False  # the queue's share alone, not the waits
        over = {"arch": arch, "workload": wl}
        return run_design_point("h200", "gpu-micro24", overrides=over)

    probe, tripled = run(35.25), run(3 * 35.25)
    # 4 rows in flight x 64 warps per SM ask more than 35.25 G requests/s: the queue binds.
    assert probe.breakdown["tables_bound_by"] == {"l2_requests": 1}
    assert probe.latency_ns > 1.3 * tripled.latency_ns
    assert "l2_requests" not in tripled.breakdown["tables_bound_by"]
    assert probe.breakdown["stall_ns"]["l2_queueing"] > 0.2 * probe.latency_ns


def test_recompiled_variants_run_the_hand_written_kernels_rows_in_flight():
    from nmp.gpu.kernel import kernel_config

    def loads(variant: str, **over) -> float:
        return kernel_config(load_gpu("h200", {"variant": variant, **over})).loads_in_flight

    def batch(variant: str, **over) -> int:
        return kernel_config(load_gpu("h200", {"variant": variant, **over})).index_batch

    # The stock loop at 2 rows (its SASS, the h200 preset); the occupancy and prefetch variants
    # run the hand-written kernel as NVRTC 13.0 builds it (its SASS): 16 lookups per 3 row
    # waits and one index wait per 16 (capped build), 4 rows per wait and 8 lookups per index
    # wait (the prefetch builds, 4 or 8 rows ahead); pinning the stock loop.
    two = {"kernel.loads_in_flight": 2}
    variants = ("baseline", "occupancy", "prefetch", "pinning")
    assert [loads(v, **two) for v in variants] == [2, 5.333, 4.0, 2]
    assert [batch(v, **two) for v in variants] == [1, 16, 8, 1]
    assert loads("prefetch", **{"kernel.prefetch_distance": 7}) == 4.0  # prefetch-8 as built
    # Without the prefetch build's own figures: 1 + distance rows, the source's intent.
    intent = {"kernel.handwritten_prefetch_loads_in_flight": 0.0}
    intent["kernel.handwritten_prefetch_index_batch"] = 0
    assert (loads("prefetch", **intent), batch("prefetch", **intent)) == (5.333 + 3, 4)
    # Without the measured hand-written kernel the variants recompile the stock loop.
    stock = {**two, "kernel.handwritten_loads_in_flight": 0}
    assert [loads(v, **stock) for v in ("occupancy", "prefetch")] == [2, 5]
    assert [batch(v, **stock) for v in ("occupancy", "prefetch")] == [1, 1]


def test_hand_written_kernel_stores_no_offset2bag():
    from nmp.gpu import run_design_point
    from nmp.gpu.index_stream import index_traffic
    from nmp.gpu.kernel import kernel_config

    offsets = np.array([0, 150, 300])
    stock = index_traffic(offsets, 4, 8, 32, fetch_bytes=64)
    hand = index_traffic(offsets, 4, 8, 32, fetch_bytes=64, stores_offset2bag=False)
    assert stock.l2_requests - hand.l2_requests == 300  # one 8-B store per lookup
    assert stock.l2_hits - hand.l2_hits == 300
    assert (stock.hbm_write_bytes, hand.hbm_write_bytes) == (300 * 8, 0.0)
    assert hand.l1_requests == stock.l1_requests  # the loads are the same

    def stores(variant: str, **over) -> bool:
        return kernel_config(load_gpu("h200", {"variant": variant, **over})).stores_offset2bag

    assert [stores(v) for v in ("baseline", "occupancy", "prefetch", "pinning")] == [
        True,
        False,
        False,
        True,
    ]
    # Without the measured hand-written kernel the variants recompile the stock loop: it stores.
    assert stores("occupancy", **{"kernel.handwritten_loads_in_flight": 0})
    # In the model: the same 1-row occupancy kernel writes the lookups' 8 B less to HBM.
    wl = {"num_tables": 1, "batch": 64, "reuse": "random"}

    def hbm_bytes(handwritten: int) -> float:
        arch = {
            "variant": "occupancy",
            "kernel.handwritten_loads_in_flight": handwritten,
            "kernel.loads_in_flight": 1,  # the stock loop recompiled at the hand-written's 1 row
        }
        r = run_design_point("h200", "gpu-micro24", overrides={"arch": arch, "workload": wl})
        assert r.breakdown["kernel"]["loads_in_flight_per_warp"] == 1
        return r.breakdown["hbm_bytes"]

    assert hbm_bytes(0) - hbm_bytes(1) == pytest.approx(64 * 150 * 8)


def test_partial_wave_shares_the_sm_miss_entries_among_the_warps_it_runs():
    from nmp.gpu.kernel import kernel_config

    cfg = kernel_config(load_gpu("h200", {"kernel.loads_in_flight": 2}))
    entries = cfg.outstanding_sectors_per_sm
    # 4-sector loads: the resident 48 warps share the SM's entries; 8 warps of a lone block don't.
    assert cfg.mlp_for(4) == min(2.0, entries / (48 * 4))
    assert cfg.mlp_for(4, 8) == 2.0
    assert cfg.mlp_for(4, entries / 4) == 1.0

    def run(mlp_at):
        # 6 one-warp blocks of 100 misses on 2 SMs x 2 slots: a full wave of 2 warps per SM,
        # then a partial wave of 1 per SM. The SM holds 2 loads: 1 each in the full wave.
        return kernel_timing(
            warp_levels=np.array([[0.0, 0.0, 100.0]] * 6),
            prices=PRICES,
            mlp=1.0,
            warps_per_block=1,
            slots=4,
            cycle_ns=1 / 1.98,
            hbm_bytes=0.0,
            peak_gbps=4800.0,
            saturation=0.772,
            queueing_ns=None,
            bounds_ns={"l2_bandwidth": 0.0},
            mlp_at=mlp_at,
            sms=2,
        )

    chain_ns = 100 * 700 / 1.98
    shared = run(lambda warps: min(2.0, 2.0 / warps))
    assert shared.t_ns == pytest.approx(1.5 * chain_ns, rel=0.02)  # the partial wave: 2 in flight
    assert run(None).t_ns == pytest.approx(2 * chain_ns, rel=0.02)  # the resident count's share


def test_unrolled_stock_body_exposes_its_first_index_load():
    # The stock SASS body of 4 lookups: i_0 + max(i_1 + i_2 + i_3, r_0) + r_3. One index sector
    # miss a body (1/8 L2, 1/8 HBM a lookup), at a random position; the others L1 hits.
    body = LoadPrices(**INDEX_MISSES, unroll=4)
    rows = np.array([40.0, 291.0, 700.0])
    # Behind an HBM row: the miss at position 0 waits in full (291 or 700), at positions 1-3 it
    # runs under row 0 (L2: nothing left; HBM: 80 + 700 - 700 = 80 beyond the first hit's 40).
    assert body.index_in_body(rows)[2] == pytest.approx((0.5 * 411 + 0.5 * 1060) / 4)
    assert body.index_per_lookup(rows, 2.0)[2] == pytest.approx(183.875 / 4)
    # The one-row rule leaves nothing behind an HBM row: the body's serial index is a new cost.
    assert LoadPrices(**INDEX_MISSES).index_per_lookup(rows, 2.0)[2] == 0.0
    # The prefetch kernel's body of 4: its index loads leave together; it waits for the miss.
    batch = LoadPrices(**INDEX_MISSES, index_batch=4)
    assert batch.index_per_lookup(rows, 4.0) == pytest.approx(np.full(3, (291 + 700) / 2 / 4))


def test_stock_unroll_is_in_the_h200_stage_time():
    from nmp.gpu import run_design_point
    from nmp.gpu.kernel import kernel_config

    assert load_gpu("h200").kernel.unroll == 4
    assert kernel_config(load_gpu("h200", {"variant": "occupancy"})).unroll == 1  # hand-written
    assert kernel_config(load_gpu("h200", {"variant": "prefetch"})).index_batch == 8
    wl = {"num_tables": 1, "batch": 256, "reuse": "random"}

    def stage(unroll: int) -> float:
        over = {"arch": {"kernel.unroll": unroll}, "workload": wl}
        return run_design_point("h200", "gpu-micro24", overrides=over).latency_ns

    assert stage(4) > 1.08 * stage(1)
