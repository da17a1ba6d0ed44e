"""The h200 preset against the facts measured on a real H200 (data/reference/GPU-H200.md),
and the register count as a per-build input."""

from __future__ import annotations

import json

import pytest

from nmp.gpu import load_gpu
from nmp.gpu.kernel import kernel_config

from .scripts import load_script


def test_h200_preset_carries_the_measured_device_facts():
    g = load_gpu("h200")
    assert (g.sm.count, g.sm.clock_mhz, g.sm.registers) == (132, 1980.0, 65536)
    assert g.l2.size_bytes == 62_914_560
    # cudaDevAttrMaxPersistingL2CacheSize 39,321,600 B is the set-aside's share of the L2.
    assert g.pinning.set_aside_fraction * g.l2.size_bytes == 39_321_600
    assert g.hbm.peak_bandwidth_gbps == 4800.0 and g.hbm.stacks == 6


def test_stock_kernel_registers_name_their_build_and_set_occupancy():
    for name in ("h200", "h100-sxm"):
        g = load_gpu(name)
        assert g.kernel.regs_per_thread == 40
        assert "torch 2.11" in g.kernel.regs_build and "CUDA 13" in g.kernel.regs_build
        # Nsight Compute: occupancy limited by registers to 6 blocks/SM (48 of 64 warps).
        cfg = kernel_config(g)
        assert (cfg.blocks_per_sm, cfg.limited_by, cfg.resident_warps_per_sm) == (
            6,
            "registers",
            48,
        )
        # The register cap of the occupancy variant reaches full occupancy without spilling.
        occ = kernel_config(load_gpu(name, {"variant": "occupancy"}))
        assert occ.resident_warps_per_sm == 64 and occ.spilled_regs == 0
    for name in ("a100-80gb", "a100-40gb"):
        assert load_gpu(name).kernel.regs_build.startswith("ASSUMED")


@pytest.mark.parametrize(
    "workload,over",
    [
        ("gpu-micro24", ["workload.reuse=high"]),
        ("gpu-micro24", ["workload.reuse=medium", "arch.variant=occupancy"]),
        ("gpu-micro24", ["workload.reuse=low", "arch.variant=prefetch"]),
        ("gpu-micro24", ["workload.reuse=random", "arch.variant=pinning"]),
        ("gpu-micro24", ["workload.batch=256"]),
        ("gpu-micro24", ["workload.batch=8192"]),
        ("dlrm-benchmark", ["arch.variant=combined"]),
    ],
)
def test_issue_commands_run_on_h200(workload, over, capsys):
    """`nmp run --arch h200 ...` as issue #37 spells it (one table, to keep CI short)."""
    from nmp.cli import main

    args = ["run", "--arch", "h200", "--workload", workload, "--json"]
    for item in [*over, "workload.num_tables=1"]:
        args += ["--set", item]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["arch"] == "h200" and out["latency_ns"] > 0
    assert out["breakdown"]["kernel"]["regs_build"].startswith("torch 2.11")


def test_model_prices_misses_with_the_probe_and_queues_at_the_slices():
    from nmp.gpu import run_design_point

    r = run_design_point(
        "h200", "gpu-micro24", overrides={"workload": {"num_tables": 1, "batch": 256}}
    )
    b = r.breakdown
    # The HBM efficiencies the model uses are the probe's (1128/2149/3706 GB/s of 4800).
    assert b["hbm_efficiency_random"]["128"] == pytest.approx(3706 / 4800)
    assert b["hbm_efficiency_random"]["32"] == pytest.approx(1128 / 4800)
    assert "random-read probe" in b["hbm_calibrated_against"]
    # Every L2 request waits at its slice: a (small) positive share of the time.
    assert b["stall_ns"]["l2_queueing"] > 0.0


def _table_script():
    return load_script("gpu_h200_table")


def test_figures_table_covers_the_issue_points_and_flags_a_non_monotone_curve(monkeypatch):
    script = _table_script()
    stage_us = script.stage_us
    calls = []

    def fake(arch, workload, wl, variant="baseline"):
        calls.append((workload, wl.get("reuse"), wl.get("batch"), variant))
        b = wl.get("batch") or 2048
        return 100.0 + (50.0 if b == 256 else b / 100) + (0 if variant == "baseline" else -10)

    monkeypatch.setattr(script, "stage_us", fake)
    fig = script.figures("h200")
    assert len(calls) == 4 * 6 + 1 + 6  # reuse x variants (the window and its control), dlrm, curve
    assert ("gpu-micro24", "high", None, "pinning-window") in calls
    assert ("gpu-micro24", "high", None, "layout-hot-first") in calls
    lines = script.table_lines(fig)
    assert any("NOT monotone" in line for line in lines)  # 256 is slower than 512 here
    assert any(line.startswith("high") and "+" in line for line in lines)
    # A real point is the stage time nmp run prints.
    from nmp.gpu import run_design_point

    wl = {"num_tables": 1, "batch": 64, "reuse": "high"}
    real = run_design_point("h200", "gpu-micro24", overrides={"workload": wl}).latency_ns / 1e3
    assert stage_us("h200", "gpu-micro24", wl) == pytest.approx(real)


def test_far_hit_latency_below_the_near_one_is_refused():
    from nmp.errors import SpecError

    assert load_gpu("h200").l2.far_hit_cycles == 520.0  # GH200 chase [dewing]
    with pytest.raises(SpecError, match="far_hit_cycles"):
        load_gpu("h200", {"l2.far_hit_cycles": 100.0})


def test_decomposition_splits_the_occupancy_gain_by_wave(monkeypatch):
    import nmp.gpu.point

    script = _table_script()
    calls = []

    class Fake:
        def __init__(self, latency_ns):
            self.latency_ns = latency_ns

    def fake(arch, workload, overrides):
        a, wl = overrides["arch"], overrides["workload"]
        calls.append((a.get("variant"), a.get("sm.max_blocks"), wl["batch"]))
        return Fake(1e3 * (wl["batch"] / 20 + (0 if a.get("sm.max_blocks") else 1)))

    monkeypatch.setattr(nmp.gpu.point, "run_design_point", fake)
    parts = script.decomposition("h200", "medium", 1)
    # 132 SMs x 6 stock blocks x 8 warps = 6,336 chunks = 1,584 bags of 4 chunks: one full wave.
    assert parts["full_wave_batch"] == 1584
    assert ("occupancy", 6, 2048) in calls
    assert parts["stock_partial_wave_adds"] == parts["baseline"] - parts["stock_full_wave_alone"]


def test_stock_rows_in_flight_are_a_per_build_input_that_sets_the_chain():
    """The stock loop's rows in flight come from its SASS (a build), like its registers; the
    chain they set is what the stage time rests on (halving it nearly halves a one-wave kernel)."""
    from nmp.gpu import run_design_point

    for name in ("h200", "h100-sxm"):
        k = load_gpu(name).kernel
        assert k.loads_in_flight == 2
        assert "torch 2.11" in k.loads_in_flight_build and "sm_90" in k.loads_in_flight_build
    for name in ("a100-80gb", "a100-40gb"):
        assert load_gpu(name).kernel.loads_in_flight_build.startswith("ASSUMED")
    wl = {"num_tables": 1, "batch": 256, "reuse": "random"}

    def stage(rows: int):
        over = {"arch": {"kernel.loads_in_flight": rows}, "workload": wl}
        return run_design_point("h200", "gpu-micro24", overrides=over)

    one, two = stage(1), stage(2)
    assert two.breakdown["kernel"]["loads_in_flight_build"].startswith("torch 2.11")
    # Two rows per wait halve the waits; each is now for the slower of two loads.
    assert 1.5 < one.latency_ns / two.latency_ns < 2.1


def test_h100_sxm_runs_the_h200s_sm_90_kernels_in_every_variant():
    """Both parts run the same sm_90 binaries (torch's cubin, the NVRTC hand-written kernels):
    every variant compiles to the same registers, occupancy, rows in flight and loop shape."""
    from nmp.gpu import VARIANTS

    for variant in VARIANTS:
        h200, h100 = (
            kernel_config(load_gpu(n, {"variant": variant})) for n in ("h200", "h100-sxm")
        )
        assert h100 == h200, variant
