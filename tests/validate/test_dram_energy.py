"""``dram.dramsim3-energy``: the kit's DRAM energy formulas against DRAMsim3's energy on every
reference case it measured (:mod:`nmp.validate.dram_energy`).

The check must hold on the reference data and must fail where a command's energy or the
background is a few per cent off: each test below scales one term the energies rest on.
"""

from __future__ import annotations

import pytest

from nmp.memory import stats
from nmp.memory.spec import Energy
from nmp.reference import dram_reference_dir
from nmp.validate.dram_energy import (
    PREDICTED_TOLERANCE,
    dram_energy_vs_dramsim3,
    standard_results,
)
from tests.memory.memref import require_ref


@pytest.fixture(scope="module")
def results():
    require_ref()
    return standard_results(dram_reference_dir())


def test_every_case_dramsim3_measured_is_checked(results):
    assert {std: len(r) for std, r in results.items()} == {"DDR4": 25, "HBM2": 16}


def test_dramsim3s_energy_lies_inside_the_kits_bounds_at_its_counts(results):
    for std, cases in results.items():
        for r in cases:
            assert r.no_rank_active_pj < r.dramsim3_pj < r.every_rank_active_pj, (std, r)


def test_the_kits_active_share_predicts_dramsim3s_energy(results):
    """DDR4's ranks are DRAMsim3's: the kit's own active share of a trace is the one DRAMsim3's
    energy implies (to 0.01), and the energy it predicts lies within 0.2 % of DRAMsim3's."""
    for r in results["DDR4"]:
        assert r.implied_share == pytest.approx(r.own_active_share, abs=0.01), r
        assert r.predicted_pj == pytest.approx(r.dramsim3_pj, rel=0.002), r
    for r in results["HBM2"]:
        assert r.predicted_pj == pytest.approx(r.dramsim3_pj, rel=PREDICTED_TOLERANCE["HBM2"])


def test_busy_ranks_are_active_but_while_they_refresh(results):
    """Where every rank works all the time, DRAMsim3's implied share is the time outside
    refresh, 1 - tRFC / tREFI (its configs: DDR4 560 / 12480, HBM2 260 / 3900 cycles): the
    background term is DRAMsim3's, not only bounded by it."""
    busy = {"DDR4": 1 - 560 / 12480, "HBM2": 1 - 260 / 3900}
    for std, cases in results.items():
        for r in cases:
            if r.case_id.startswith(("random64", "emb_uniform")):
                assert r.implied_share == pytest.approx(busy[std], abs=0.005), r


def test_the_check_agrees_on_the_reference_data():
    require_ref()
    rows = dram_energy_vs_dramsim3(quick=True)
    assert [r.id for r in rows] == ["dram.dramsim3-energy.ddr4", "dram.dramsim3-energy.hbm2"]
    for r in rows:
        assert r.verdict == "agrees", r.model
        assert r.group == "simulator"
        assert r.model.startswith(("25/25 inside", "16/16 inside")), r.model


def _scaled(monkeypatch, term: str, factor: float) -> None:
    original = Energy.command_excess

    def scaled(self, timing, banks_per_rank):
        excess = original(self, timing, banks_per_rank)
        excess[term] *= factor
        return excess

    monkeypatch.setattr(Energy, "command_excess", scaled)
    stats._SPEC_CONSTANTS.clear()  # (energies are kept per spec)


@pytest.mark.parametrize(
    "term, factor",
    [
        ("act", 0.0),
        ("act", 0.97),
        ("act", 1.03),
        ("act", 3.0),
        ("rd", 0.97),
        ("rd", 1.03),
        ("wr", 1.1),
        ("ref", 0.9),
        ("ref", 1.1),
    ],  # fmt: skip
)
def test_a_command_energy_a_few_per_cent_off_is_caught(monkeypatch, term, factor):
    require_ref()
    _scaled(monkeypatch, term, factor)
    rows = dram_energy_vs_dramsim3(quick=True)
    stats._SPEC_CONSTANTS.clear()
    assert rows[0].id.endswith("ddr4") and rows[0].verdict == "disagrees", rows[0].model


@pytest.mark.parametrize("factor, caught", [(1.03, ("ddr4",)), (1.1, ("ddr4", "hbm2"))])
def test_a_background_a_few_per_cent_off_is_caught(monkeypatch, factor, caught):
    """The background currents (IDD3N, here I_rho and its per-bank part, and IDD2N per
    rank-cycle) 3 or 10 % high: the bounds move with them, but the kit's own active share no
    longer predicts DRAMsim3's energy (HBM2's tolerance is wider: its pseudo channels against
    DRAMsim3's legacy channels)."""
    require_ref()
    original = stats._energy_of

    def louder(spec):
        consts = original(spec)
        if consts is None:
            return None
        return consts._replace(
            i_rho=factor * consts.i_rho,
            per_bank=factor * consts.per_bank,
            idd2n=factor * consts.idd2n,
        )

    monkeypatch.setattr(stats, "_energy_of", louder)
    stats._SPEC_CONSTANTS.clear()
    rows = dram_energy_vs_dramsim3(quick=True)
    stats._SPEC_CONSTANTS.clear()
    verdicts = {r.id.rsplit(".", 1)[1]: r.verdict for r in rows}
    assert {std for std, v in verdicts.items() if v == "disagrees"} == set(caught), verdicts


def test_without_the_reference_data_the_check_says_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("NMP_SHARED", str(tmp_path))
    (row,) = dram_energy_vs_dramsim3(quick=True)
    assert row.verdict == "error"
    assert str(tmp_path) in row.model
