"""DRAM read-burst energy by DRAMsim3's IDD formula (nmp/memory/stats.py), recomputed from the
DDR5-4800 preset's stated currents, and what a design point charges for it.

A RD burst: ``VDD x (IDD4R - IDD3N) x nBL x tCK x devices`` (V x mA x ns = pJ). ReCross's
DDR5-4800 (models/memory/ddr5-4800-40.toml [energy]): VDD 1.1 V, IDD4R 190 mA, IDD3N 50 mA
(chosen, below a 16Gb x8 DDR5-4800 datasheet's: the preset says why), 4 x8 devices per 32-bit
channel, nBL 8 (BL16), tCK 0.416 ns.

A near-memory design point reads every looked-up row's 64-B lines once (each one RD burst);
``read_path_pj`` is what its units pay of those bursts and ``read_path_saved_pj`` what the
in-DRAM units' shorter data path saves (nmp/arch/energy.py): together every RD's energy.
"""

from __future__ import annotations

import pytest

from nmp.arch import run_design_point
from nmp.memory import command_energy_pj, load_memory

VDD_V, IDD4R_MA, IDD3N_MA, DEVICES, NBL, TCK_NS = 1.1, 190.0, 50.0, 4.0, 8, 0.416
RD_PJ = VDD_V * (IDD4R_MA - IDD3N_MA) * NBL * TCK_NS * DEVICES  # 2050 pJ per 64-B burst
SMALL = {"batch": 8}


def test_a_read_burst_costs_the_idd4r_formula_of_the_presets_currents():
    mem = load_memory("ddr5-4800-40")
    e = command_energy_pj(mem, {"RD": 1}, 0.0)
    assert e["rd"] == pytest.approx(RD_PJ, rel=1e-12)
    assert e["io"] == pytest.approx(4.0 * 64 * 8, rel=1e-12)  # io_pj_per_bit 4, apart


def _point(memory: dict | None = None):
    return run_design_point(
        "recross", "recross-eval", overrides={"workload": SMALL, "memory": memory or {}}, seed=0
    )


def _bursts(res) -> float:
    """Every level's DRAM reads, one burst per 64-B line."""
    levels = res.breakdown["levels"]
    return sum(lv["dram_bytes"] for lv in levels.values()) / 64


def test_a_design_points_read_energy_is_its_bursts_at_the_idd4r_formula():
    res = _point()
    bursts = _bursts(res)
    assert bursts == res.extra["lookups"] * 4  # 256-B rows: 4 lines each, read once
    d = res.breakdown["dram_energy"]
    assert d["read_path_pj"] + d["read_path_saved_pj"] == pytest.approx(bursts * RD_PJ, rel=1e-9)


def test_the_read_energy_moves_with_idd4r_above_idd3n_and_nothing_else_does():
    base = _point()
    res = _point({"energy.idd4r_ma": 3 * IDD4R_MA})
    factor = (3 * IDD4R_MA - IDD3N_MA) / (IDD4R_MA - IDD3N_MA)
    b, d = base.breakdown["dram_energy"], res.breakdown["dram_energy"]
    for key in ("read_path_pj", "read_path_saved_pj"):
        assert d[key] == pytest.approx(factor * b[key], rel=1e-12)
    for key in ("array_pj", "io_pj"):
        assert d[key] == pytest.approx(b[key], rel=1e-12)
    assert res.latency_ns == base.latency_ns
    grew = res.breakdown["energy_pj"]["dram_core"] - base.breakdown["energy_pj"]["dram_core"]
    assert grew == pytest.approx((factor - 1) * b["read_path_pj"], rel=1e-9)


# Micron's 16Gb DDR5 die rev A at DDR5-4800 as gem5 quotes it (src/python/gem5/components/memory/
# dram_interfaces/ddr5.py, DDR5_4400_4x8): its IDD3N (all banks open) exceeds its one-bank IDD0.
DATASHEET = {
    "energy.idd0_ma": 122.0,
    "energy.idd2n_ma": 92.0,
    "energy.idd3n_ma": 142.0,
    "energy.idd4r_ma": 530.0,
    "energy.idd4w_ma": 479.0,
    "energy.idd5ab_ma": 277.0,
}


def test_a_current_set_that_makes_a_command_energy_negative_is_refused():
    """IDD0 over tRC below the background it includes gave a negative activation energy and a
    smaller energy per lookup, silently: the set is refused, naming the key; the boundary
    (an activation worth exactly its background) is accepted."""
    from nmp.errors import SpecError

    with pytest.raises(SpecError, match="idd0_ma.*activation energy would be negative"):
        load_memory("ddr5-4800-40", overrides=DATASHEET)
    t = load_memory("ddr5-4800-40").timing
    background = IDD3N_MA * t["nRAS"] + 42.0 * t["nRP"]  # the preset's IDD2N: 42 mA
    edge = load_memory("ddr5-4800-40", overrides={"energy.idd0_ma": background / t["nRC"]})
    assert command_energy_pj(edge, {"ACT": 1}, 0.0)["act"] == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(SpecError, match="idd4r_ma.*must be >= idd3n_ma"):
        load_memory("ddr5-4800-40", overrides={"energy.idd4r_ma": IDD3N_MA - 1.0})
