"""The compute and cache energy terms of a design point, each recomputed as its count x its
per-unit cost, the cost taken from the source the preset cites (not from a recorded result),
and moved through the same override ``nmp run --set`` applies.

- host-cpu (nmp/arch/policies/host.py): the cores add every element of every looked-up row,
  ``units = lookups x dim x pj_per_flop``; every line a cache serves reads its array,
  ``sram = (l1 x l1_pj_per_bit + l2 x l2_pj_per_bit + llc x llc_pj_per_bit) x 64 B x 8``.
- RecNMP (nmp/arch/timing.py): its rank units add every element of every row,
  ``lookups x dim x rank.pj_per_add``, and the host adds the ranks' pooled partial sums (FP32,
  returned over the channel) at the host's ``pj_per_flop``.

The per-unit costs, by the presets' own citations (Horowitz, ISSCC'14, 45 nm):
an FP32 add 0.9 pJ; a 16-lane SIMD add ~70 pJ of instruction overhead plus 0.9 pJ a lane, so
70 / 16 + 0.9 pJ per element; a 64-bit read of a 32 KB SRAM ~20 pJ, of a 1 MB SRAM ~100 pJ.
"""

from __future__ import annotations

import pytest

from nmp.arch import run_design_point
from nmp.arch.spec import HostSpec
from nmp.workload import load_workload

SMALL = {"batch": 8}  # recross-eval: 26 tables of dim 64, 16640 lookups a batch
LINE_BITS = 64 * 8
HOROWITZ_ADD_PJ = 0.9
HOROWITZ_SIMD_PJ_PER_ELEMENT = 70.0 / 16 + 0.9  # 5.275: the presets round it to "~5"
HOROWITZ_32KB_PJ_PER_BIT = 20.0 / 64  # L1
HOROWITZ_1MB_PJ_PER_BIT = 100.0 / 64  # L2 and LLC
OTHER_TERMS = ("dram_core", "dram_io")


def _point(arch: str, **arch_overrides):
    return run_design_point(
        arch, "recross-eval", overrides={"workload": SMALL, "arch": arch_overrides}, seed=0
    )


def _energy(res) -> dict:
    return res.breakdown["energy_pj"]


def _dim_lookups(res) -> float:
    """Sum over the batch's lookups of their row's dim (every table has dim 64 here)."""
    wl = load_workload("recross-eval", SMALL)
    assert {t.dim for t in wl.tables} == {64}
    assert not wl.weighted  # (weighted bags multiply too: another term)
    return res.extra["lookups"] * 64.0


# -- host-cpu: the cores' adds ---------------------------------------------------------------


def test_the_host_cpu_presets_add_costs_what_horowitz_gives_per_simd_element():
    host = _point("host-cpu")
    pj = _energy(host)["units"] / _dim_lookups(host)
    # exactly one per-element cost (the preset's), and that is Horowitz's to the rounding
    assert pj == pytest.approx(HOROWITZ_SIMD_PJ_PER_ELEMENT, rel=0.06)


@pytest.mark.parametrize("factor", [3.0, 0.0])
def test_the_host_cpus_add_energy_scales_with_pj_per_flop_alone(factor):
    base = _point("host-cpu")
    pj = base.breakdown["energy_pj"]["units"] / _dim_lookups(base)
    moved = _point("host-cpu", **{"host.pj_per_flop": factor * pj})
    assert _energy(moved)["units"] == pytest.approx(factor * _energy(base)["units"], rel=1e-12)
    for part in (*OTHER_TERMS, "sram"):
        assert _energy(moved)[part] == pytest.approx(_energy(base)[part], rel=1e-12)
    assert moved.latency_ns == base.latency_ns


# -- host-cpu: the caches' reads ---------------------------------------------------------------


def _lines(res) -> dict:
    served = res.breakdown["host"]["lines_served"]
    assert sum(served.values()) == res.extra["lookups"] * 4  # 256-B rows: 4 lines each
    return served


def test_the_host_cpus_cache_energy_is_lines_served_x_each_levels_cited_cost():
    host = _point("host-cpu")
    lines = _lines(host)
    assert lines["llc"] > 0  # the LLC serves some lines: its cost shows
    per_line = {
        "l1": HOROWITZ_32KB_PJ_PER_BIT * LINE_BITS,
        "l2": HOROWITZ_1MB_PJ_PER_BIT * LINE_BITS,
        "llc": HOROWITZ_1MB_PJ_PER_BIT * LINE_BITS,
    }
    expected = sum(lines[lv] * per_line[lv] for lv in per_line)
    # the presets round Horowitz's per-bit figures (0.3125 -> 0.3, 1.5625 -> 1.6)
    assert _energy(host)["sram"] == pytest.approx(expected, rel=0.05)
    # and the LLC's share alone: the sram term less what the private caches' hits cost
    spec_l1, spec_l2 = 0.3, 1.6  # models/arch/host-cpu.toml (tested above as Horowitz's)
    llc_part = _energy(host)["sram"] - (lines["l1"] * spec_l1 + lines["l2"] * spec_l2) * LINE_BITS
    assert llc_part / (lines["llc"] * LINE_BITS) == pytest.approx(HOROWITZ_1MB_PJ_PER_BIT, rel=0.05)


@pytest.mark.parametrize("factor", [3.0, 0.0])
def test_the_host_cpus_cache_energy_moves_by_the_llcs_lines_times_its_cost(factor):
    base = _point("host-cpu")
    lines = _lines(base)
    llc_pj = 1.6  # the preset's (checked against Horowitz above)
    moved = _point("host-cpu", **{"host.llc_pj_per_bit": factor * llc_pj})
    delta = _energy(moved)["sram"] - _energy(base)["sram"]
    assert delta == pytest.approx((factor - 1.0) * lines["llc"] * LINE_BITS * llc_pj, rel=1e-9)
    assert _lines(moved) == lines
    for part in (*OTHER_TERMS, "units"):
        assert _energy(moved)[part] == pytest.approx(_energy(base)[part], rel=1e-12)


def test_the_host_spec_defaults_are_the_cited_costs_too():
    # a near-memory design without a [host] table pays these for its host's adds
    h = HostSpec()
    assert h.pj_per_flop == pytest.approx(HOROWITZ_SIMD_PJ_PER_ELEMENT, rel=0.06)
    assert h.llc_pj_per_bit == pytest.approx(HOROWITZ_1MB_PJ_PER_BIT, rel=0.05)


# -- RecNMP: the rank units' adds and the host's ---------------------------------------------


def _host_adds(res) -> float:
    """FP32 adds of the host: the pooled partial sums the ranks return over the channel (the
    channel's bytes less the lookups' instructions, 4 B an element)."""
    bits = 85  # models/arch/recnmp.toml [instruction] bits_per_lookup
    result_bytes = res.breakdown["channel"]["bytes"] - res.extra["lookups"] * bits / 8
    return result_bytes / 4


def test_recnmps_rank_units_add_every_element_at_horowitzs_fp32_add():
    base = _point("recnmp")
    free = _point("recnmp", **{"rank.pj_per_add": 0.0})
    units = _energy(base)["units"] - _energy(free)["units"]
    assert units == pytest.approx(_dim_lookups(base) * HOROWITZ_ADD_PJ, rel=1e-12)
    # what is left is the host's adds of the returned partial sums, at its per-element cost
    host_pj = _energy(free)["units"] / _host_adds(free)
    assert host_pj == pytest.approx(HOROWITZ_SIMD_PJ_PER_ELEMENT, rel=0.06)
    assert _host_adds(free) > 0 and free.latency_ns == base.latency_ns


@pytest.mark.parametrize("factor", [3.0, 0.0])
def test_recnmps_unit_energy_scales_with_pj_per_add_and_nothing_else_moves(factor):
    base = _point("recnmp", **{"rank.pj_per_add": HOROWITZ_ADD_PJ})
    moved = _point("recnmp", **{"rank.pj_per_add": factor * HOROWITZ_ADD_PJ})
    added = _dim_lookups(base) * HOROWITZ_ADD_PJ
    assert _energy(moved)["units"] - _energy(base)["units"] == pytest.approx(
        (factor - 1.0) * added, rel=1e-9
    )
    for part in (*OTHER_TERMS, "sram"):
        assert _energy(moved)[part] == pytest.approx(_energy(base)[part], rel=1e-12)
