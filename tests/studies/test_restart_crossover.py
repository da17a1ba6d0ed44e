"""The crossover sweep's restart_s axis (papers/cpr, papers/ecrec): the restart a failure costs is
chosen (one minute) in every setup, and it is most of CPR's overhead there. The mechanism: a
rolled-back job pays it once per expected failure, so checkpointing's and CPR's overheads are
affine in it with one slope, 100 x (failures in the horizon) / horizon = 100 x servers / server
MTBF per second of restart, and ECRec's does not move."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nmp.train.crossover import PARAMS, SCALES, sweep
from nmp.train.extrapolate import expected
from nmp.train.setup import load_setup


def _overheads(dep) -> dict[str, float]:
    return {r["strategy"]: r["overhead_pct"] for r in expected(dep)}


@pytest.mark.parametrize("setup", ["cpr", "ecrec"])
def test_restart_is_charged_linearly_to_the_strategies_that_roll_back(setup: str) -> None:
    dep, sources = load_setup(setup)
    assert dep.restart_s == 60.0 and "chosen" in sources["restart_s"]
    slope = 100.0 * dep.servers / (dep.server_mtbf_hours * 3600.0)  # % per second of restart
    base = _overheads(dep)
    for restart in (30.0, 120.0):
        moved = _overheads(replace(dep, restart_s=restart))
        for name, pct in moved.items():
            if name.startswith(("checkpoint", "cpr-")):
                assert pct - base[name] == pytest.approx(slope * (restart - 60.0), rel=1e-6)
            else:  # ecrec and none keep training: no restart
                assert pct == base[name]


def test_restart_is_most_of_cprs_overhead_on_its_setup() -> None:
    """At one minute the restart is 0.119 points of CPR-MFU's 0.132 % on the cpr setup, so x0.5
    and x2 move it by -45 % and +90 %; checkpointing by -5 % and +9 %."""
    dep, _ = load_setup("cpr")
    nominal = _overheads(dep)
    half = _overheads(replace(dep, restart_s=30.0))
    double = _overheads(replace(dep, restart_s=120.0))
    assert half["cpr-mfu"] / nominal["cpr-mfu"] == pytest.approx(0.55, abs=0.02)
    assert double["cpr-mfu"] / nominal["cpr-mfu"] == pytest.approx(1.90, abs=0.03)
    assert double["checkpoint"] / nominal["checkpoint"] == pytest.approx(1.09, abs=0.01)


def test_crossover_sweeps_restart_and_the_step_crossover_scales_inversely() -> None:
    """The axis is swept on the setup's grid; ECRec's step-time crossover with CPR-MFU lies where
    ECRec's per-step parity work (proportional to 1 / step) meets CPR's overhead, which is
    nearly all restart: halving the restart doubles the crossover's step time (roughly)."""
    dep, _ = load_setup("cpr")
    assert PARAMS.get("restart_s").grid(dep) == [60.0 * s for s in SCALES]
    assert PARAMS.get("restart_s").grid(replace(dep, restart_s=0.0)) == []

    def step_crossover(restart: float) -> float:
        _, crossings = sweep(replace(dep, restart_s=restart))
        (c,) = [c for c in crossings if c["parameter"] == "step_ms" and c["rival"] == "cpr-mfu"]
        assert c["ecrec_wins_above"] is True
        return c["crossover_value"]

    at_60, at_120 = step_crossover(60.0), step_crossover(120.0)
    assert at_60 == pytest.approx(412.0, rel=0.02)
    assert 0.45 < at_120 / at_60 < 0.55
