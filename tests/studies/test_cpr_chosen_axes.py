"""The crossover sweep's axes for CPR's two chosen values (papers/cpr, papers/ecrec): its bound on
the portion of lost samples (``cpr_pls``, 2 %) and its full-save period (``cpr_full_every``, 4).

The mechanism: CPR's save interval is 2 x bound x servers x MTBF, and a failure's lost samples
are not re-run (they cost accuracy, not time), so a looser bound buys fewer saves with more
lost samples; a save that is full more often writes more. Neither value touches checkpointing
or ECRec, and over the whole grid neither moves CPR-MFU past them on either setup."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nmp.train.crossover import FULL_EVERY, PARAMS, SCALES, sweep
from nmp.train.extrapolate import expected
from nmp.train.setup import load_setup

SETUPS = ("cpr", "ecrec")


def _rows(dep) -> dict[str, dict]:
    return {r["strategy"]: r for r in expected(dep)}


def test_the_axes_sweep_the_setups_values() -> None:
    dep, _ = load_setup("ecrec")
    assert dep.cpr_pls == 0.02 and dep.cpr_full_every == 4
    assert PARAMS.get("cpr_pls").grid(dep) == [0.02 * s for s in SCALES]
    assert PARAMS.get("cpr_pls").grid(replace(dep, cpr_pls=0.2)) == [
        0.2 * s for s in SCALES if 0.2 * s < 1.0
    ]
    assert PARAMS.get("cpr_full_every").grid(dep) == list(FULL_EVERY)


@pytest.mark.parametrize("setup", SETUPS)
@pytest.mark.parametrize("param", ["cpr_pls", "cpr_full_every"])
def test_only_cprs_rows_move(setup: str, param: str) -> None:
    dep, _ = load_setup(setup)
    base = _rows(dep)
    for value in PARAMS.get(param).grid(dep):
        rows = _rows(replace(dep, **{param: value}))
        for name, row in rows.items():
            if not name.startswith("cpr-"):
                assert row["overhead_pct"] == base[name]["overhead_pct"], (name, value)


@pytest.mark.parametrize("setup", SETUPS)
def test_a_looser_bound_trades_lost_samples_for_time(setup: str) -> None:
    dep, _ = load_setup(setup)
    grid = PARAMS.get("cpr_pls").grid(dep)
    mfu = [_rows(replace(dep, cpr_pls=p))["cpr-mfu"] for p in grid]
    overheads = [r["overhead_pct"] for r in mfu]
    lost = [r["pls_effective"] for r in mfu]
    assert all(a > b for a, b in zip(overheads, overheads[1:], strict=False))
    assert all(a < b for a, b in zip(lost, lost[1:], strict=False))
    # a save full every time keeps every row fresh: the portion lost is the bound itself
    for p in (0.005, 0.02, 0.08):
        full = _rows(replace(dep, cpr_pls=p, cpr_full_every=1))["cpr-mfu"]
        assert full["pls_effective"] == pytest.approx(p, rel=1e-12)


@pytest.mark.parametrize("setup", SETUPS)
def test_every_save_full_makes_the_partial_policies_alike(setup: str) -> None:
    dep, _ = load_setup(setup)
    every = _rows(replace(dep, cpr_full_every=1))
    assert every["cpr-mfu"]["overhead_pct"] == every["cpr-ssu"]["overhead_pct"]
    overheads = [
        _rows(replace(dep, cpr_full_every=f))["cpr-mfu"]["overhead_pct"] for f in FULL_EVERY
    ]
    assert all(a > b for a, b in zip(overheads, overheads[1:], strict=False))


def test_the_chosen_values_leverage_on_the_ecrec_setup() -> None:
    """docs/studies.md's figures: x0.5 / x2 of the bound move CPR-MFU by +33 % / -16 %, of the
    full-save period by +22 % / -11 %."""
    dep, _ = load_setup("ecrec")
    nominal = _rows(dep)["cpr-mfu"]["overhead_pct"]

    def moved(**change) -> float:
        return _rows(replace(dep, **change))["cpr-mfu"]["overhead_pct"] / nominal

    assert moved(cpr_pls=0.01) == pytest.approx(1.33, abs=0.01)
    assert moved(cpr_pls=0.04) == pytest.approx(0.84, abs=0.01)
    assert moved(cpr_full_every=2) == pytest.approx(1.22, abs=0.01)
    assert moved(cpr_full_every=8) == pytest.approx(0.89, abs=0.01)


@pytest.mark.parametrize("setup", SETUPS)
def test_no_value_of_either_moves_cpr_past_its_rivals(setup: str) -> None:
    dep, _ = load_setup(setup)
    _, crossings = sweep(dep)
    mine = [c for c in crossings if c["parameter"] in ("cpr_pls", "cpr_full_every")]
    assert len(mine) == 4
    for c in mine:
        assert c["crossover_value"] is None and not c["ecrec_wins_at_setup"], c
    points, _ = sweep(dep)
    for p in points:
        if p["parameter"] in ("cpr_pls", "cpr_full_every"):
            assert p["cpr-mfu_pct"] < min(p["checkpoint_pct"], p["ecrec_pct"]), p
