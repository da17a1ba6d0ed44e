"""The parity unit's area and clock at the units' node: nmp rtl report's figures (PyRTL's
130-nm library) rescaled by ``RtlFigures.at_node``'s stated rule, Dennard scaling: at node
``t`` from node ``t0``, s = t / t0, area x s^2, fmax / s. The units' node is ReCross's, 40 nm
(data/reference/PAPERS.md: "units in 40 nm at 300 MHz"). A design's parity area is one unit's
area times its parity level's nodes (nmp/arch/area.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nmp.arch import load_arch, run_design_point
from nmp.arch.area import UNIT_TECH_NM, design_area_mm2, parity_unit_figures

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ROOT / "data" / "reference" / "PAPERS.md"
REPORT = ROOT / "nmp" / "rtl" / "data" / "parity_report.json"
PYRTL_NM = 130.0  # nmp/rtl/synth.py: PyRTL's estimates are for a 130 nm library (vsclib013)


def _recross_node_nm() -> float:
    text = PAPERS.read_text()
    entry = text[text.index("- **ReCross** (ISCA'23)") :]
    entry = entry[: entry.index("\n- **", 1)]
    return float(re.search(r"units in (\d+) nm", entry).group(1))


def _raw(gf: bool) -> dict:
    """The cached figures of the 64-bit datapath at their own node (nmp rtl report)."""
    figures = json.loads(REPORT.read_text())["figures"]
    return figures[f"{'gf' if gf else 'xor'}-delta-w64-d1024-s2"]


def test_the_units_node_is_recross_s_40_nm():
    assert _recross_node_nm() == 40.0
    assert _recross_node_nm() == UNIT_TECH_NM


@pytest.mark.parametrize("gf", [False, True], ids=["xor", "gf"])
def test_the_parity_unit_is_the_rtl_figure_scaled_to_40_nm(gf):
    raw = _raw(gf)
    assert raw["tech_nm"] == PYRTL_NM
    s = _recross_node_nm() / raw["tech_nm"]
    area, fmax, source = parity_unit_figures(gf=gf)
    assert source.startswith("nmp rtl report")
    assert area == pytest.approx(raw["pyrtl_area_mm2"] * s * s, rel=1e-12)
    assert fmax == pytest.approx(raw["fmax_mhz"] / s, rel=1e-12)
    # a smaller node: a smaller, faster unit
    assert area < raw["pyrtl_area_mm2"] and fmax > raw["fmax_mhz"]


def test_a_designs_parity_area_is_its_nodes_times_the_scaled_unit(small_workload):
    # recross: parity over the bank-group units, 2 ranks x 4 bank groups (models/arch/recross.toml)
    arch = load_arch("recross")
    arch.bind(small_workload)
    assert arch.spec.parity.level == "bankgroup"
    nodes = 2 * 4
    s = _recross_node_nm() / PYRTL_NM
    unit = _raw(False)["pyrtl_area_mm2"] * s * s
    rep = design_area_mm2(arch)
    assert rep.by_level["parity"] == pytest.approx(nodes * unit, rel=1e-12)
    assert rep.parity_source.startswith("nmp rtl report")


def test_a_design_points_parity_area_is_the_scaled_rtl_figure():
    # trim-g with Reed-Solomon: the GF datapath on each of its 16 bank-group nodes (2 ranks x 8
    # units, models/arch/trim-g.toml)
    res = run_design_point(
        "trim-g",
        "recross-eval",
        overrides={"workload": {"batch": 2}, "arch": {"parity.code": "rs", "parity.r": 2}},
        seed=0,
    )
    s = _recross_node_nm() / PYRTL_NM
    unit = _raw(True)["pyrtl_area_mm2"] * s * s
    assert res.breakdown["area_mm2"]["parity"] == pytest.approx(2 * 8 * unit, rel=1e-12)
