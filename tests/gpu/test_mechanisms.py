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
