"""The GPU embedding-stage model: occupancy and spills, physical sanity, latency under load, the
MLP cap on prefetch, pinning where reuse is, set-sampled vs exact simulation, the HBM derivation
and calibration, the design-point contract."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from nmp.errors import NmpError, SpecError
from nmp.evaluate.point import run_point
from nmp.gpu import VARIANTS, catalog_rows, load_gpu, run_design_point
from nmp.gpu.hbm import CALIBRATION_FILE, _key, calibrate, gpu_memory_spec, hbm_calibration
from nmp.gpu.kernel import kernel_config
from nmp.memory.spec import load_memory

# gpu-micro24 cut down: 2 tables x 60K rows, batch 256 (the full one is in benchmarks/gpu.py).
SMALL = {"num_tables": 2, "rows": 60_000, "batch": 256}
# All 12 tables of 500K rows (6M rows: the 60K pinned rows are 1 % of them), a small batch.
WIDE = {"batch": 64}
# A scaled-down reuse case: 6K hot rows (3 MB) per table against an L2 cut to 2 x 2 MB whose
# set-aside holds 3K rows per partition (the paper's 60K rows against 2 x 20 MB, scaled by 1/10).
REUSE = {"num_tables": 2, "rows": 200_000, "batch": 512, "hot_rows": 6000}
SCALED_L2 = {"l2__size_bytes": 4 * 2**20, "pinning__rows": 3000}
WORKLOADS = {"small": SMALL, "wide": WIDE, "reuse": REUSE}
REQUIRED_KEYS = {
    "arch",
    "workload",
    "memory",
    "latency_ns",
    "lookups_per_s",
    "energy_pj_per_lookup",
    "area_mm2",
    "breakdown",
}


@functools.cache
def point(arch: str, variant: str, reuse: str, wl_key: str = "small", **extra):
    wl = dict(WORKLOADS[wl_key], reuse=reuse)
    arch_over = {"variant": variant, "sim.line_sample": 1}  # exact unless a test samples
    for key, value in extra.items():
        arch_over[key.replace("__", ".")] = value
    return run_design_point(arch, "gpu-micro24", overrides={"arch": arch_over, "workload": wl})


def test_occupancy_follows_the_register_file():
    gpu = load_gpu("a100-80gb")
    for variant, regs, loads in [
        ("baseline", 56, 1),
        ("occupancy", 42, 1),
        ("prefetch", 62, 3),
        ("combined", 42, 3),
    ]:
        cfg = kernel_config(load_gpu("a100-80gb", {"variant": variant}))
        # Per warp: regs x 32 rounded up to 256; an SM holds whole 8-warp blocks.
        per_warp = math.ceil(regs * 32 / 256) * 256
        blocks = min(65536 // per_warp // 8, 64 // 8, 32)
        assert (cfg.regs_per_thread, cfg.blocks_per_sm, cfg.loads_in_flight) == (
            regs,
            blocks,
            loads,
        )
        assert cfg.mlp_lines(gpu.sm.count) == 108 * blocks * 8 * loads
    assert kernel_config(gpu).occupancy == 0.5
    assert kernel_config(load_gpu("a100-80gb", {"variant": "occupancy"})).occupancy == 0.625
    # Spills: the stock loop fits its 42-register minimum; the prefetch ring (2 x 3) does not.
    spills = {
        v: kernel_config(load_gpu("a100-80gb", {"variant": v})).spilled_regs for v in VARIANTS
    }
    assert spills == {"baseline": 0, "occupancy": 0, "prefetch": 0, "pinning": 0, "combined": 6}
    tight = load_gpu("a100-80gb", {"variant": "occupancy", "kernel.maxrregcount": 32})
    cfg = kernel_config(tight)
    assert cfg.spilled_regs == 10 and cfg.spill_loads_per_lookup == 10.0
    assert cfg.blocks_per_sm == 8  # 32 registers: the warp slots limit (64 warps)


def test_mlp_is_bounded_by_the_l1_miss_entries():
    cfg = kernel_config(load_gpu("a100-80gb", {"variant": "prefetch"}))
    assert cfg.loads_in_flight == 3
    # 8 outstanding sectors per warp = two 4-sector row slices in flight.
    assert cfg.mlp_for(4) == 2.0 and cfg.mlp_for(2) == 3.0
    few = kernel_config(
        load_gpu("a100-80gb", {"variant": "prefetch", "sm.outstanding_sectors_per_sm": 64})
    )
    assert few.mlp_for(4) == pytest.approx(64 / (few.resident_warps_per_sm * 4))


def test_hbm_latency_rises_with_utilization():
    cal = hbm_calibration(load_gpu("a100-40gb").hbm)
    us = np.linspace(0.0, cal.saturation * 0.99, 12)
    q = [cal.queueing_ns(u) for u in us]
    assert q[0] == 0.0 and all(b >= a for a, b in zip(q, q[1:], strict=False))
    assert q[-1] > 100.0  # near saturation a miss waits longer than its own DRAM access
    assert math.isinf(cal.queueing_ns(cal.saturation))
    # The replays really were loaded: achieved utilization follows the offered load.
    assert cal.load_utilization[0] < 0.1 < 0.5 < cal.load_utilization[-1] <= cal.saturation


@pytest.mark.parametrize("reuse", ["high", "random"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_physical_sanity(variant, reuse):
    r = point("a100-40gb", variant, reuse)
    b = r.breakdown
    peak = b["hbm_peak_bandwidth_gbps"]
    assert 0 < b["achieved_hbm_bandwidth_gbps"] <= peak
    # No schedule beats moving its HBM bytes at peak bandwidth.
    assert r.latency_ns >= b["hbm_bytes"] / peak
    assert sum(b["stall_ns"].values()) == pytest.approx(r.latency_ns, rel=1e-9)
    assert all(v >= -1e-9 for v in b["stall_ns"].values())
    assert 0.0 <= b["l1_hit_rate"] <= 1.0 and 0.0 <= b["l2_hit_rate"] <= 1.0
    assert sum(b["loads_served_by"].values()) == pytest.approx(1.0)
    assert r.lookups_per_s == pytest.approx(b["lookups"] / r.latency_ns * 1e9)
    assert r.energy_pj_per_lookup > 0 and r.area_mm2 == 826.0


def test_without_reuse_pinning_gives_no_gain():
    # Uniform lookups over 6M rows: the pinned 1 % of rows (chosen on another batch) serve ~1 %
    # of the lookups, and take L2 ways from everything else. (On small tables a pinned set
    # that is a large share of all rows does serve lookups: that is footprint, not reuse.)
    base = point("a100-80gb", "baseline", "random", "wide")
    pinned = point("a100-80gb", "pinning", "random", "wide")
    assert pinned.breakdown["pinning"]["lines_persisting"] > 50_000
    assert pinned.latency_ns >= 0.99 * base.latency_ns
    # Per table the pre-kernel pins the 9.6K profiled rows of a 500K-row table (~2 % of it):
    # they serve ~2 % of uniform lookups, hits bought with the pre-kernel's own HBM reads.
    assert pinned.breakdown["l2_hit_rate"] < base.breakdown["l2_hit_rate"] + 0.03


def test_reuse_and_pinning_and_mlp_act_where_the_model_says():
    rand = point("a100-80gb", "baseline", "random", "reuse", **SCALED_L2)
    high = point("a100-80gb", "baseline", "high", "reuse", **SCALED_L2)
    assert high.breakdown["l2_hit_rate"] > rand.breakdown["l2_hit_rate"] + 0.2
    assert high.latency_ns < rand.latency_ns
    # Pinning keeps the hot rows where reuse is; on uniform lookups it has nothing to keep.
    high_pin = point("a100-80gb", "pinning", "high", "reuse", **SCALED_L2)
    rand_pin = point("a100-80gb", "pinning", "random", "reuse", **SCALED_L2)
    gain_high = high_pin.breakdown["l2_hit_rate"] - high.breakdown["l2_hit_rate"]
    gain_rand = rand_pin.breakdown["l2_hit_rate"] - rand.breakdown["l2_hit_rate"]
    assert gain_high > 0.05 and gain_high > gain_rand + 0.05
    assert high.latency_ns / high_pin.latency_ns > rand.latency_ns / rand_pin.latency_ns
    # More loads in flight shorten the kernel, by at most what the MLP cap (2 loads) buys.
    pre = point("a100-80gb", "prefetch", "random", "reuse", **SCALED_L2)
    assert pre.breakdown["kernel"]["mlp_loads_per_warp"] == 2.0
    assert 1.0 < rand.latency_ns / pre.latency_ns <= 2.0
    # ... and fill the memory queues: a loaded miss takes longer.
    assert pre.breakdown["hbm_latency_loaded_ns"] > rand.breakdown["hbm_latency_loaded_ns"]


def test_line_sampling_matches_the_exact_simulation():
    exact = point("a100-80gb", "baseline", "high")
    sampled = point("a100-80gb", "baseline", "high", "small", sim__line_sample=4)
    for key in ("l1_hit_rate", "l2_hit_rate"):
        assert sampled.breakdown[key] == pytest.approx(exact.breakdown[key], abs=0.01)
    assert sampled.latency_ns == pytest.approx(exact.latency_ns, rel=0.03)
    assert sampled.breakdown["line_sample"] == 4


def test_per_table_pinning_charges_its_prefetch():
    base = point("a100-80gb", "baseline", "medium")
    serial = point("a100-80gb", "pinning", "medium", "small", pinning__prefetch_overlaps=False)
    pin = serial.breakdown["pinning"]
    assert pin["scope"] == "per_table" and pin["prefetch_charged"]
    stall = serial.breakdown["stall_ns"]["pin_prefetch"]
    assert stall == pytest.approx(pin["prefetch_ns"]) and stall > 0
    assert serial.breakdown["hbm_bytes"] > base.breakdown["hbm_bytes"]
    b = serial.breakdown
    assert serial.latency_ns >= b["hbm_bytes"] / b["hbm_peak_bandwidth_gbps"]
    # Overlapped (the default): no serial pre-kernel, the same bytes load the kernels' HBM.
    over = point("a100-80gb", "pinning", "medium", "small")
    assert over.breakdown["pinning"]["prefetch_overlaps"]
    assert over.breakdown["stall_ns"]["pin_prefetch"] == 0.0
    assert over.breakdown["hbm_bytes"] == pytest.approx(b["hbm_bytes"], rel=1e-6)
    assert over.latency_ns < serial.latency_ns
    assert (
        over.breakdown["hbm_utilization_in_kernels"]
        > serial.breakdown["hbm_utilization_in_kernels"]
    )


def test_hot_rows_are_the_most_counted_rows():
    from nmp.gpu.stage_pinning import hot_rows
    from nmp.workload import generate_batch, load_workload

    batch = generate_batch(load_workload("gpu-micro24", dict(SMALL, reuse="low")), seed=3)
    ranked = []
    for t, lookups in enumerate(batch.tables):
        c = np.bincount(lookups.indices, minlength=lookups.num_rows)
        ranked += [(-int(c[r]), t, int(r)) for r in np.flatnonzero(c)]
    ranked.sort()
    for k in (1, 777, 5000):
        got = hot_rows(batch, k)
        expect = {t: [r for _, tt, r in ranked[:k] if tt == t] for t in range(2)}
        assert {t: rows.tolist() for t, rows in got} == expect


def test_hbm_spec_is_the_memory_preset_at_the_parts_data_rate():
    for name in ("a100-40gb", "a100-80gb", "h100-sxm", "h200"):
        hbm = load_gpu(name).hbm
        spec = gpu_memory_spec(hbm)  # one stack
        assert spec.org.channels == hbm.channels_per_stack
        assert spec.peak_bandwidth_gbps * hbm.stacks == pytest.approx(
            hbm.peak_bandwidth_gbps, rel=0.01
        )
        base = load_memory(hbm.memory_preset)
        for key in ("nCL", "nRCDRD", "nRP", "nRAS", "nFAW"):
            ns_base = base.timing[key] * base.tck_ns
            ns_new = spec.timing[key] * spec.tck_ns
            assert ns_base <= ns_new + 1e-9 < ns_base + spec.tck_ns
        assert spec.timing["nBL"] == base.timing["nBL"]


def test_calibration_cache_is_what_the_dram_engine_gives():
    hbm = load_gpu("a100-80gb").hbm
    cached = hbm_calibration(hbm)
    assert CALIBRATION_FILE.is_file() and _key(hbm) in CALIBRATION_FILE.read_text()
    fresh = calibrate(hbm)
    assert fresh == cached
    eff = [cached.efficiency[k] for k in ("32", "64", "128")]
    assert 0 < eff[0] < eff[1] < eff[2] <= 1.0


def test_design_point_contract_and_dispatch():
    data = run_point(
        "a100-80gb",
        "gpu-micro24",
        None,
        {
            "arch.variant": "combined",
            **{f"workload.{k}": v for k, v in SMALL.items()},
            "workload.reuse": "low",
        },
    ).to_json()
    assert set(data) >= REQUIRED_KEYS
    assert data["variant"] == "combined" and data["memory"] == "hbm2e-3186"
    b = data["breakdown"]
    for key in (
        "achieved_hbm_bandwidth_gbps",
        "l1_hit_rate",
        "l2_hit_rate",
        "stall_ns",
        "kernel",
        "pinning",
        "hbm_latency_loaded_ns",
        "hbm_utilization_in_kernels",
    ):
        assert key in b


def test_bad_input_names_the_key():
    with pytest.raises(SpecError, match="arch.variant"):
        load_gpu("a100-80gb", {"variant": "turbo"})
    with pytest.raises(SpecError, match="memory"):
        run_design_point("a100-80gb", "gpu-micro24", memory="ddr4-3200aa")
    with pytest.raises(SpecError, match="memory.channels"):
        run_design_point("a100-80gb", "gpu-micro24", overrides={"memory": {"channels": 2}})
    with pytest.raises(SpecError, match="sim.line_sample"):
        load_gpu("a100-80gb", {"sim.line_sample": 7})
    with pytest.raises(SpecError, match="pinning.set_aside_fraction"):
        load_gpu("a100-80gb", {"pinning.set_aside_fraction": 1.5})
    with pytest.raises(SpecError, match="l2.partitions"):
        load_gpu("a100-80gb", {"l2.partitions": 3})
    with pytest.raises(SpecError, match="l1.hit_cycles"):
        load_gpu("a100-80gb", {"l1.hit_cycles": -1})
    with pytest.raises(SpecError, match="l2.bytes_per_cycle"):
        load_gpu("a100-80gb", {"l2.bytes_per_cycle": 0})
    with pytest.raises(SpecError, match="unknown gpu preset"):
        load_gpu("a200")
    with pytest.raises(NmpError, match="peak_bandwidth_gbps"):
        load_gpu("h100-sxm", {"hbm.data_rate_gbps": 3.0})


def test_catalog_lists_every_preset():
    rows = {r["name"]: r for r in catalog_rows()}
    assert set(rows) == {"a100-40gb", "a100-80gb", "h100-sxm", "h200"}
    assert rows["h100-sxm"]["SMs"] == 132 and rows["a100-40gb"]["peak_GB/s"] == 1555.2
    assert all(np.isfinite(r["die_mm2"]) for r in rows.values())


def test_access_policy_window_persists_the_hot_rows_laid_out_first():
    """The window covers each table's hottest rows laid out first (nmp.gpu.hot_layout): with
    them inside the set-aside, hitRatio is 1, the kernel itself makes them persist (no
    pre-kernel), and the L2 keeps more of them than without pinning."""
    base = point("a100-80gb", "baseline", "high", "reuse", **SCALED_L2)
    window = point(
        "a100-80gb", "pinning", "high", "reuse", pinning__mechanism="access_window", **SCALED_L2
    )
    pin = window.breakdown["pinning"]
    # 3000 hot rows x 512 B = 1,536,000 B against a 1.5-MiB set-aside per partition: ratio 1.
    assert pin["window_bytes"] == 3000 * 512 and pin["hit_ratio"] == 1.0
    assert pin["prefetch_ns"] == 0.0 and window.breakdown["stall_ns"]["pin_prefetch"] == 0.0
    assert pin["lines_persisting"] > 0
    assert window.breakdown["l2_hit_rate"] > base.breakdown["l2_hit_rate"] + 0.02
    with pytest.raises(NmpError, match="table 0: an access-policy window of 1,536,000 B"):
        point(
            "a100-80gb",
            "pinning",
            "high",
            "reuse",
            pinning__mechanism="access_window",
            pinning__max_window_bytes=1_000_000,
            **SCALED_L2,
        )


def test_window_pinning_moves_with_its_hit_ratio_and_set_aside():
    """CUDA: hitRatio is the share of the window's lines given hitProp, and persisting lines
    hold at most the set-aside. Ignore either and these figures would not move."""
    over = dict(SCALED_L2, pinning__mechanism="access_window", pinning__hit_ratio=1.0)
    full = point("a100-80gb", "pinning", "high", "reuse", **over)
    quarter = point("a100-80gb", "pinning", "high", "reuse", **{**over, "pinning__hit_ratio": 0.25})
    narrow = point(
        "a100-80gb", "pinning", "high", "reuse", **{**over, "pinning__set_aside_fraction": 0.125}
    )
    p_full, p_q, p_n = (x.breakdown["pinning"] for x in (full, quarter, narrow))
    # A quarter of the window's lines persist: about a quarter as many lines, fewer hits.
    assert 0.2 < p_q["lines_persisting"] / p_full["lines_persisting"] < 0.3
    assert quarter.breakdown["l2_hit_rate"] < full.breakdown["l2_hit_rate"] - 0.01
    # A set-aside of 2 of 16 ways holds at most its lines (both partitions), fewer hits.
    assert p_n["set_aside_bytes"] == 2 * 2**20 * 2 // 16  # per 2-MiB partition
    assert p_n["lines_persisting"] <= 2 * p_n["set_aside_bytes"] // 128
    assert p_n["lines_persisting"] < p_full["lines_persisting"] / 3
    assert narrow.breakdown["l2_hit_rate"] < full.breakdown["l2_hit_rate"] - 0.01


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("kernel.grid_blocks", 10**18),  # internal "array is too big"
        ("kernel.grid_blocks", 10**7),  # past 7 GB and 120 s
        ("kernel.block_y", 10**6),
        ("sm.count", 10**9),  # out of memory
        ("sm.clock_mhz", 1e-300),  # latency_ns Infinity in --json
        ("l1.bytes_per_cycle", 1e-300),
        ("l2.bytes_per_cycle", 1e-300),
        ("l2.requests_per_ns", 1e-300),
        ("hbm.data_rate_gbps", 1e-300),
    ],
)
def test_counts_and_rates_far_outside_any_gpu_are_refused_by_key(key, value):
    with pytest.raises(SpecError, match=f"key 'arch.{key}'"):
        load_gpu("a100-80gb", {key: value})
