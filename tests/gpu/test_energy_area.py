"""The GPU design point's energy and area, recomputed by hand from each preset's stated numbers.

nmp/gpu/model.py charges a batch's energy as six terms (``_result``):

    hbm_dynamic    = HBM row sectors x pJ/sector at their mean fetch size
                     + streamed bytes / 32 x pJ/sector of a 128-B fetch   (nmp.memory IDD model)
    hbm_background = background W per channel x channels x t_ns x 1e3
    l1             = (L1 sectors + spill reload sectors) x l1_pj_per_sector
    l2             = L2 sectors x l2_pj_per_sector
    sm_instructions= warp instructions x pj_per_instruction
    static         = static_power_w x t_ns x 1e3                          (W x ns = nJ = 1e3 pJ)

and a design point's area is its die (``die_area_mm2``). Each constant below is copied from
models/gpu/<preset>.toml, so a changed preset value (or a changed term in the model) fails here.
"""

from __future__ import annotations

import pytest

from nmp.gpu import load_gpu, run_design_point
from nmp.gpu.hbm import hbm_calibration, with_probe

# One table, 64 bags of gpu-micro24's 150 lookups of 128 fp32 (512-B rows: 4 warp-loads of
# 128 B each): 64 x 150 x 4 = 38,400 warp-lookups, the model's "units".
TINY = {"num_tables": 1, "batch": 64}
UNITS = 64 * 150 * 4
LOOKUPS = 64 * 150
SECTOR = 32

# The [energy] table, the kernel's instructions per lookup, HBM channels (stacks x channels per
# stack) and the die of each preset (models/gpu/*.toml).
PRESETS = {
    "a100-80gb": {
        "l1_pj": 10.0,
        "l2_pj": 40.0,
        "instr_pj": 50.0,
        "static_w": 60.0,
        "instr_per_lookup": 12.0,
        "channels": 5 * 8,
        "die_mm2": 826.0,
    },
    "h100-sxm": {
        "l1_pj": 8.0,
        "l2_pj": 32.0,
        "instr_pj": 40.0,
        "static_w": 80.0,
        "instr_per_lookup": 12.0,
        "channels": 5 * 16,
        "die_mm2": 814.0,
    },
    "h200": {
        "l1_pj": 8.0,
        "l2_pj": 32.0,
        "instr_pj": 40.0,
        "static_w": 90.0,
        "instr_per_lookup": 12.0,
        "channels": 6 * 16,
        "die_mm2": 814.0,
    },
}


@pytest.fixture
def stage(monkeypatch):
    """``stage(gpu)`` -> (PointResult, the counters ``_result`` priced) of a tiny batch."""
    import nmp.gpu.model as model

    seen: dict = {}
    real = model._result

    def spy(gpu, cfg, cal, lat, batch, t_ns, totals, *rest):
        seen.update(totals=dict(totals), t_ns=t_ns)
        return real(gpu, cfg, cal, lat, batch, t_ns, totals, *rest)

    monkeypatch.setattr(model, "_result", spy)

    def run(gpu: str):
        seen.clear()
        r = run_design_point(gpu, "gpu-micro24", overrides={"workload": TINY})
        return r, dict(seen)

    return run


@pytest.mark.parametrize("gpu", sorted(PRESETS))
def test_each_energy_term_is_its_count_times_the_presets_price(stage, gpu):
    p = PRESETS[gpu]
    r, seen = stage(gpu)
    tot, t_ns = seen["totals"], seen["t_ns"]
    b = r.breakdown
    e = b["energy_pj"]
    assert t_ns == r.latency_ns > 0
    assert b["lookups"] == LOOKUPS

    # Static power over the batch's time: W x ns x 1e3 = pJ.
    assert e["static"] == pytest.approx(p["static_w"] * r.latency_ns * 1e3, rel=1e-12)
    # Warp instructions: every warp-lookup runs the loop body once.
    assert tot["units"] == UNITS
    assert e["sm_instructions"] == pytest.approx(
        UNITS * p["instr_per_lookup"] * p["instr_pj"], rel=1e-12
    )
    # L1 and L2 sectors, as the breakdown reports their bytes.
    l1_sectors = (b["l1_bytes"] + b["kernel"]["spill_l1_bytes"]) / SECTOR
    assert l1_sectors > 0 and b["l2_bytes"] > 0
    assert e["l1"] == pytest.approx(l1_sectors * p["l1_pj"], rel=1e-12)
    assert e["l2"] == pytest.approx(b["l2_bytes"] / SECTOR * p["l2_pj"], rel=1e-12)

    # HBM: the nmp.memory calibration of the preset's HBM (the on-disk cache, as the model reads
    # it), background per channel over the batch, dynamic per sector at the mean fetch size.
    spec = load_gpu(gpu)
    assert spec.hbm.channels == p["channels"]
    cal = with_probe(hbm_calibration(spec.hbm), spec.hbm)
    assert cal.background_w_per_channel > 0
    assert e["hbm_background"] == pytest.approx(
        cal.background_w_per_channel * p["channels"] * r.latency_ns * 1e3, rel=1e-12
    )
    fetch = tot["hbm_sectors"] * SECTOR / tot["hbm_fetches"]
    assert 32 <= fetch <= 128
    dynamic = tot["hbm_sectors"] * cal.pj_per_sector_for(fetch) + tot[
        "hbm_stream_bytes"
    ] / SECTOR * cal.pj_per_sector_for(128.0)
    assert tot["hbm_sectors"] > 0 and tot["hbm_stream_bytes"] > 0
    assert e["hbm_dynamic"] == pytest.approx(dynamic, rel=1e-12)
    assert b["hbm_bytes"] == pytest.approx(
        tot["hbm_sectors"] * SECTOR + tot["hbm_stream_bytes"], rel=1e-12
    )
    # Without the spy's counters: every HBM byte costs between the cheapest and the dearest
    # sector price the calibration gives (32-128 B fetches), a band narrower than 3x.
    prices = [cal.pj_per_sector_for(float(s)) for s in (32, 64, 128)]
    assert max(prices) < 3 * min(prices)
    hbm_sectors = b["hbm_bytes"] / SECTOR
    assert min(prices) * hbm_sectors <= e["hbm_dynamic"] <= max(prices) * hbm_sectors

    # The headline: pJ per lookup is the six terms over the lookups, and nothing else.
    assert set(e) == {"hbm_dynamic", "hbm_background", "l1", "l2", "sm_instructions", "static"}
    by_hand = (
        dynamic
        + cal.background_w_per_channel * p["channels"] * r.latency_ns * 1e3
        + l1_sectors * p["l1_pj"]
        + b["l2_bytes"] / SECTOR * p["l2_pj"]
        + UNITS * p["instr_per_lookup"] * p["instr_pj"]
        + p["static_w"] * r.latency_ns * 1e3
    )
    assert r.energy_pj_per_lookup == pytest.approx(by_hand / LOOKUPS, rel=1e-12)


def test_zeroing_static_power_removes_exactly_its_share():
    # The key assumption a100-80gb names (arch.energy.static_power_w = 0): the energy per lookup
    # falls by 60 W x the batch's time / lookups, and the time does not move.
    over = {"workload": TINY}
    base = run_design_point("a100-80gb", "gpu-micro24", overrides=over)
    zero = run_design_point(
        "a100-80gb",
        "gpu-micro24",
        overrides={**over, "arch": {"energy.static_power_w": 0.0}},
    )
    assert zero.latency_ns == base.latency_ns
    assert zero.breakdown["energy_pj"]["static"] == 0.0
    drop = base.energy_pj_per_lookup - zero.energy_pj_per_lookup
    assert drop == pytest.approx(60.0 * base.latency_ns * 1e3 / LOOKUPS, rel=1e-9)


@pytest.mark.parametrize("gpu", sorted(PRESETS))
def test_a_gpu_design_points_area_is_its_die(gpu):
    # GA100 826 mm^2; GH100 814 mm^2 (H100 SXM and H200 carry the same die).
    assert load_gpu(gpu).die_area_mm2 == PRESETS[gpu]["die_mm2"]
    r = run_design_point(gpu, "gpu-micro24", overrides={"workload": TINY})
    assert r.area_mm2 == PRESETS[gpu]["die_mm2"]
