"""A near-memory unit's clock sets its arithmetic bound (nmp/arch/bounds.py ``level_bound``):
a lookup (or a child's partial sum) takes ceil(dim / lanes) cycles of its unit, so a level's
compute time is its busiest node's cycles x 1000 / clock_mhz ns. The cycles are integers;
at 1000 MHz the compute time in ns is the cycle count itself.

ReCross's bank-group units run at 300 MHz (PAPERS.md: "units in 40 nm at 300 MHz";
models/arch/recross.toml [bankgroup] clock_mhz).
"""

from __future__ import annotations

import pytest

from nmp.arch import run_design_point

RECROSS_UNIT_MHZ = 300.0  # PAPERS.md (ReCross)
SMALL = {"batch": 8}


def _point(**arch):
    return run_design_point(
        "recross", "recross-eval", overrides={"workload": SMALL, "arch": arch}, seed=0
    )


def test_recross_bankgroup_units_run_at_the_papers_300_mhz():
    at_ghz = _point(**{"bankgroup.clock_mhz": 1000.0})
    cycles = at_ghz.breakdown["compute_ns"]["bankgroup"]
    assert cycles > 0 and cycles == round(cycles)  # whole cycles of the busiest unit
    preset = _point()
    # the same placement (the partition does not move between these clocks) ...
    assert (
        preset.breakdown["levels"]["bankgroup"]["lookups"]
        == at_ghz.breakdown["levels"]["bankgroup"]["lookups"]
    )
    # ... takes the same cycles at the paper's clock
    assert preset.breakdown["compute_ns"]["bankgroup"] == pytest.approx(
        cycles * 1000.0 / RECROSS_UNIT_MHZ, rel=1e-12
    )


def test_a_design_bound_by_its_units_arithmetic_slows_as_one_over_the_clock():
    # the frequency placement (not the LP, which moves rows off slow units) keeps the rows
    # where they are, so only the clock changes; at 30 MHz the bank-group units bind
    fixed = {"bandwidth_aware_partition": False}
    slow = _point(**fixed, **{"bankgroup.clock_mhz": 30.0})
    slower = _point(**fixed, **{"bankgroup.clock_mhz": 10.0})
    for res in (slow, slower):
        assert res.breakdown["bottleneck"] == "bankgroup"
        bd = res.breakdown
        assert res.latency_ns == pytest.approx(bd["compute_ns"]["bankgroup"] + bd["tail_ns"])
    t = slow.breakdown["compute_ns"]["bankgroup"]
    assert slower.breakdown["compute_ns"]["bankgroup"] == pytest.approx(3.0 * t, rel=1e-12)
    assert slower.latency_ns - slower.breakdown["tail_ns"] == pytest.approx(3.0 * t, rel=1e-12)
