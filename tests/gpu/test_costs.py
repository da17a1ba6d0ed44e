"""Each cost the h200 stage time rests on, pinned so that tripling or zeroing it fails a test
(docs/gpu-model.md, "What the tests pin"): a hand-computed time of a tiny kernel from the stated
formula, or the stage's prices against their sourced values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nmp.gpu.timing import LoadPrices, SliceQueue, kernel_timing

CYCLE_NS = 1 / 1.98  # h200: 1980 MHz
PRICES = LoadPrices(
    l1_cycles=40.0, l2_cycles=291.0, hbm_unloaded_cycles=700.0, index_hbm_share=0.0, spill_cycles=0
)


def one_warp(levels, *, hbm_bytes=0.0, queueing_ns=None, slices=None, mlp=1.0, prices=PRICES):
    """One warp in one block on one slot: its chain is the kernel."""
    return kernel_timing(
        warp_levels=np.array([levels], dtype=float),
        prices=prices,
        mlp=mlp,
        warps_per_block=1,
        slots=1,
        cycle_ns=CYCLE_NS,
        hbm_bytes=hbm_bytes,
        peak_gbps=4800.0,
        saturation=0.772,
        queueing_ns=queueing_ns,
        bounds_ns={},
        slices=slices,
    )


def larger_root(b: float, c: float) -> float:
    """The larger root of x^2 - b x + c = 0."""
    return (b + math.sqrt(b * b - 4 * c)) / 2


def test_each_miss_waits_once_for_the_hbm_queue_at_the_kernels_own_load():
    # n misses in one chain, a queue that adds a ns per unit of utilization u = B / (t x peak):
    # t = n (700 cycles + a B / (t peak)), i.e. t^2 - n 700c t - n a B / peak = 0.
    n, a, nbytes = 100, 40000.0, 6.0e5
    t = one_warp([0, 0, n], hbm_bytes=nbytes, queueing_ns=lambda u: a * u)
    expect = larger_root(n * 700 * CYCLE_NS, -n * a * nbytes / 4800.0)
    assert t.t_ns == pytest.approx(expect, rel=1e-5)
    assert t.stall_ns["hbm_queueing"] == pytest.approx(expect - n * 700 * CYCLE_NS, rel=1e-4)


def test_each_l2_request_waits_once_at_the_slices_md1_queue():
    # n L2 hits, slices of P B/ns serving a line in s cycles (M/D/1: s u / (2 (1 - u)), u = K / t
    # with K = bytes / P): t = n c (291 + s K / (2 (t - K))), a quadratic in t.
    n, s, nbytes, peak = 100, 60.0, 2.0e5, 20.0
    q = SliceQueue(bytes=nbytes, peak_bytes_per_ns=peak, service_cycles=s)
    t = one_warp([0, n, 0], queueing_ns=lambda u: 0.0, slices=q)
    k, chain = nbytes / peak, n * 291 * CYCLE_NS
    expect = larger_root(chain + k, chain * k - n * CYCLE_NS * s * k / 2)
    assert t.t_ns == pytest.approx(expect, rel=1e-5)
    assert t.stall_ns["l2_queueing"] == pytest.approx(expect - chain, rel=1e-4)


@pytest.fixture(scope="module")
def tiny_stage():
    """One h200 table, a batch of 64 bags (one wave), exact cache simulation."""
    from nmp.gpu import run_design_point

    def run(gpu: str = "h200", **arch):
        over = {"arch": {"sim.line_sample": 1, **arch}, "workload": TINY}
        return run_design_point(gpu, "gpu-micro24", overrides=over)

    return run


TINY = {"num_tables": 1, "batch": 64, "reuse": "high"}


# Mean latencies in SM cycles. h100-sxm: pointer chases on GH100 [dewing], L2 291 (near), memory
# 700. h200: its own probe (2026-11-30), fixed part + exponential spread: L2 272.3 cycles +
# 31.3 ns, memory 273.7 ns of fabric + its HBM spec's tRCD + CL + BL + 93.8 ns.
H200_L2 = 272.3 + 31.3 / CYCLE_NS
H200_HBM = (273.7 + 33.92 + 93.8) / CYCLE_NS


@pytest.mark.parametrize(
    "gpu,far_cycles,l2_cycles,hbm_cycles",
    [("h200", 520.0, H200_L2, H200_HBM), ("h100-sxm", 538.0, 291.0, 700.0)],
)
def test_hopper_prices_each_level_at_its_sourced_latency(
    tiny_stage, gpu, far_cycles, l2_cycles, hbm_cycles
):
    # L1 40 cycles [dewing]; far L2 hits 520 (GH200) or 538 (H100). HBM efficiencies: the
    # H200's probe (1,128 / 2,149 / 3,706 GB/s of 4,800 at 32 / 64 / 128 B), which h100-sxm
    # takes at its own peak.
    from nmp.gpu import load_gpu

    assert load_gpu(gpu).l2.far_hit_cycles == far_cycles
    b = tiny_stage(gpu).breakdown
    eff = b["hbm_efficiency_random"]
    for size, gbps in ((32, 1128), (64, 2149), (128, 3706)):
        assert eff[str(size)] == pytest.approx(gbps / 4800, rel=1e-3)
    assert b["latency_ns"]["l1_hit"] == pytest.approx(40 * CYCLE_NS)
    assert b["latency_ns"]["l2_hit"] == pytest.approx(l2_cycles * CYCLE_NS)
    assert b["latency_ns"]["hbm"] == pytest.approx(hbm_cycles * CYCLE_NS, rel=1e-3)
    # Each level's share of the chain is its loads x its mean latency (the L2's near / far mix).
    served, stall, far = b["loads_served_by"], b["stall_ns"], b["l2_far_hit_share"]
    assert served["l1"] > 0 and served["l2"] > 0  # the far share is pinned in test_mechanisms
    l2_mix = l2_cycles + far * (far_cycles - l2_cycles)
    assert stall["l1_hit"] / stall["hbm_latency"] == pytest.approx(
        served["l1"] * 40 / (served["hbm"] * hbm_cycles), rel=1e-3
    )
    assert stall["l2_hit"] / stall["hbm_latency"] == pytest.approx(
        served["l2"] * l2_mix / (served["hbm"] * hbm_cycles), rel=1e-3
    )


def test_l1_hit_latency_is_in_the_stage_time(tiny_stage):
    # L1 hits: the index loads (every lookup) and the rows a bag reads twice. The stage time
    # rises with their latency (the derivative's sign), through the unrolled body's index waits.
    t = [tiny_stage(**{"l1.hit_cycles": c}).latency_ns for c in (0.0, 40.0, 120.0)]
    assert t[0] < t[1] < t[2]


def test_h200_slices_serve_at_their_stated_rates():
    # The slices' service times from the preset's stated resources: 128-B lines, 512-KiB slices
    # of the 60-MiB L2 (120), 5,120 B/cycle in all (chosen: A100's), and the L2 probe's plateau
    # of 58.09 G requests/s (H200, 2026-11-30) shared by the slices.
    from nmp.gpu import load_gpu
    from nmp.gpu.queues import slice_queue

    slices = 62_914_560 // (512 * 1024)
    q = slice_queue(load_gpu("h200"), bytes=1.0, requests=1.0)
    assert q.peak_bytes_per_ns == pytest.approx(5120 * 1.98)
    assert q.service_cycles == pytest.approx(128 * slices / 5120)
    assert q.requests_per_ns == pytest.approx(58.09)
    assert q.request_service_cycles == pytest.approx(slices / 58.09 / CYCLE_NS)


def test_a_spilled_kernel_waits_for_one_l1_reload_a_lookup(tiny_stage):
    # A cap of 16 registers under the hand-written kernel's 24 spills 8: each lookup's chain
    # waits for one reload from the L1 (40 cycles), against a row miss's mean (a one-row build).
    one_row = {"kernel.handwritten_loads_in_flight": 1.0, "kernel.handwritten_index_batch": 1}
    b = tiny_stage(variant="occupancy", **{"kernel.maxrregcount": 16, **one_row}).breakdown
    assert b["kernel"]["spilled_regs"] == 8 and b["kernel"]["mlp_loads_per_warp"] == 1.0
    stall, served = b["stall_ns"], b["loads_served_by"]
    assert stall["spill"] / stall["hbm_latency"] == pytest.approx(
        40 / (served["hbm"] * H200_HBM), rel=1e-3
    )


def test_a_spilled_registers_reloads_load_the_l1_too(tiny_stage):
    # The 8 spilled registers are reloaded once a lookup, each 32 threads x 4 B from the L1:
    # with the L1's rate starved the stage is its row sectors and those reloads over it.
    one_row = {"kernel.handwritten_loads_in_flight": 1.0, "kernel.handwritten_index_batch": 1}
    r = tiny_stage(
        variant="occupancy",
        **{"kernel.maxrregcount": 16, **one_row, "l1.bytes_per_cycle": 0.01},
    )
    b = r.breakdown
    units = 64 * 150 * 4  # bags x lookups x warps a row (dim 128)
    assert b["kernel"]["spill_l1_bytes"] == units * 8 * 32 * 4
    assert b["tables_bound_by"] == {"l1_bandwidth": 1}
    l1_bytes = b["l1_bytes"] + b["kernel"]["spill_l1_bytes"]
    assert r.latency_ns == pytest.approx(l1_bytes / (0.01 * 132 * 1.98), rel=1e-5)


def test_the_issue_and_l1_bounds_bind_at_their_stated_rates(tiny_stage):
    # 64 bags x 150 lookups x 4 warps (dim 128) = 38,400 warp-lookups.
    units = 64 * 150 * 4
    # Issue: warp instructions over 132 SMs x 4 schedulers at 1.98 GHz.
    r = tiny_stage(**{"kernel.instructions_per_lookup": 10_000.0})
    assert r.breakdown["tables_bound_by"] == {"issue": 1}
    assert r.latency_ns == pytest.approx(units * 10_000 / (132 * 4 * 1.98), rel=1e-5)
    # L1: its sectors over 132 SMs x bytes per cycle.
    r = tiny_stage(**{"l1.bytes_per_cycle": 0.01})
    assert r.breakdown["tables_bound_by"] == {"l1_bandwidth": 1}
    assert r.latency_ns == pytest.approx(r.breakdown["l1_bytes"] / (0.01 * 132 * 1.98), rel=1e-5)


def test_the_l2_bound_binds_at_its_stated_rate_without_the_slice_queue(tiny_stage):
    """L2: its sectors at bytes per cycle. With HBM queueing on, the slices' queue carries the
    L2's rate (the bound adds nothing there: zeroing it moved no figure); without queueing the
    bound is the floor the stage stands on."""
    r = tiny_stage(**{"l2.bytes_per_cycle": 0.01, "hbm.queueing": False})
    assert r.breakdown["tables_bound_by"] == {"l2_bandwidth": 1}
    assert r.latency_ns == pytest.approx(r.breakdown["l2_bytes"] / (0.01 * 1.98), rel=1e-5)


def test_the_hbm_bound_binds_at_the_probed_random_rates(tiny_stage):
    """HBM: every byte the stage moves (row sectors, index reads, write-backs) at the probe's
    random-access rate for its fetch size. With every size probed at the same rate and the
    queue off, the stage is its bytes over that rate, and halves when the rate doubles."""
    times = []
    for gbps in (10.0, 20.0):
        over = {"hbm.queueing": False, "hbm.probe_random_gbps": [gbps] * 5}
        r = tiny_stage(**over)
        assert r.breakdown["tables_bound_by"] == {"hbm_bandwidth": 1}
        assert r.latency_ns == pytest.approx(r.breakdown["hbm_bytes"] / gbps, rel=1e-6)
        times.append(r.latency_ns)
    assert times[0] == pytest.approx(2 * times[1], rel=1e-6)


def test_l2_hits_are_priced_at_the_far_share_the_cache_stream_counted(monkeypatch):
    # The stage's far share is the stream's far line hits over its L2 line hits (the count is
    # checked against a reference LRU in test_cache), and each L2 hit costs 291 + share x
    # (520 - 291) cycles against a miss's 700.
    import nmp.gpu.model as model
    from nmp.gpu import run_design_point

    counted: list[dict[str, int]] = []
    real_stream = model.run_kernel_stream

    def stream(*args, **kwargs):
        out = real_stream(*args, **kwargs)
        counted.append(out[0].counts)
        return out

    monkeypatch.setattr(model, "run_kernel_stream", stream)
    wl = {"num_tables": 1, "batch": 1024, "reuse": "random"}
    over = {"arch": {"sim.line_sample": 1}, "workload": wl}
    b = run_design_point("h200", "gpu-micro24", overrides=over).breakdown
    (c,) = counted
    far = c["l2_far_line_hits"] / c["l2_line_hits"]
    assert 0 < far < 1 and b["l2_far_hit_share"] == pytest.approx(far)
    served, stall = b["loads_served_by"], b["stall_ns"]
    assert stall["l2_hit"] / stall["hbm_latency"] == pytest.approx(
        served["l2"] * (H200_L2 + far * (520 - H200_L2)) / (served["hbm"] * H200_HBM), rel=1e-3
    )
