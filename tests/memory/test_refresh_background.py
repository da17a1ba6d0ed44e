"""The background during an all-bank refresh's tRFC (``energy.refresh_background``).

DRAMsim3 (the kit's default, ``"precharged"``) counts the rank's banks closed then, IDD2N, and
charges the refresh IDD5B - IDD3N on top; DRAMPower (``"active"``) counts every bank active,
IDD3N, so that a refresh draws IDD5B in all, the datasheet's definition of IDD5B (the current
with a REF command every tRFC). The second adds (IDD3N - IDD2N) x tRFC a refresh to the
background and moves nothing else; the command log and its helper are covered too."""

from __future__ import annotations

import numpy as np
import pytest
from memref import dram_ref_dir, load_cases

from nmp.config import preset_names
from nmp.errors import NmpError
from nmp.memory import load_memory, read_trace, replay
from nmp.memory.command_log import logged_run
from nmp.memory.stats import command_energy_pj
from nmp.memory.trace import REQUEST_DTYPE
from nmp.reference import case_memory_spec

README_CASE = "emb_zipf_a0.8_r1m_rb64_p40@ddr4_1r"


def _replays(case_id: str):
    case = {c["id"]: c for c in load_cases()}[case_id]
    base = case_memory_spec(case["memory_args"])
    requests = read_trace(dram_ref_dir() / case["trace"])
    active = load_memory(base, overrides={"energy.refresh_background": "active"})
    return base, replay(requests, base, drain=True), active, replay(requests, active, drain=True)


@pytest.mark.parametrize("case_id", [README_CASE, "random_rw50_4g@ddr5_1r"])
def test_active_adds_idd3n_less_idd2n_over_trfc_per_refresh(dram_ref, case_id):
    base, precharged, spec, active = _replays(case_id)
    assert base.energy.refresh_background == "precharged"
    e = spec.energy
    per_refresh_pj = e.vdd_v * e.devices * spec.tck_ns * (e.idd3n_ma - e.idd2n_ma)
    per_refresh_pj *= spec.timing["nRFC"]
    refreshes = active.cmd_counts["REF"]
    assert refreshes > 10 and active.cmd_counts == precharged.cmd_counts
    added = active.energy_breakdown_pj["background"] - precharged.energy_breakdown_pj["background"]
    assert added == pytest.approx(refreshes * per_refresh_pj, rel=1e-12)
    for term in ("act", "rd", "wr", "ref", "io"):
        assert active.energy_breakdown_pj[term] == precharged.energy_breakdown_pj[term]
    assert active.energy_pj == pytest.approx(precharged.energy_pj + added, rel=1e-12)


def test_every_preset_keeps_dramsim3s_accounting():
    for name in preset_names("memory"):
        energy = load_memory(name).energy
        assert energy is None or energy.refresh_background == "precharged", name


def test_another_word_is_refused_by_key():
    with pytest.raises(NmpError, match="energy.refresh_background"):
        load_memory("ddr4-3200aa", overrides={"energy.refresh_background": "idle"})


def test_active_with_idd3n_below_idd2n_is_refused():
    low = {"energy.idd3n_ma": 30.0, "energy.idd2n_ma": 40.0, "energy.idd0_ma": 200.0}
    load_memory("ddr4-3200aa", overrides=low)  # (precharged: no refresh term to go negative)
    with pytest.raises(NmpError, match="refresh_background"):
        load_memory("ddr4-3200aa", overrides={**low, "energy.refresh_background": "active"})


def test_a_command_log_covers_one_channel_only():
    spec = load_memory("ddr4-3200aa", overrides={"org.channels": 2})
    with pytest.raises(NmpError, match="one channel"):
        logged_run(spec, np.zeros(0, REQUEST_DTYPE))


def test_a_count_with_every_rank_active_is_not_raised_twice():
    """Where the cycles are all taken as active (the arch models' summed replays: IDD3N the
    whole time), a refresh's tRFC is at IDD3N already: "active" moves nothing there; with
    precharged cycles it raises at most those (two ranks: cycles count per rank)."""
    base = load_memory("ddr4-3200aa", overrides={"org.ranks": 2})
    active = load_memory(base, overrides={"energy.refresh_background": "active"})
    counts = {"ACT": 100, "RD": 400, "REF": 5}
    cycles, nrfc = 100_000.0, base.timing["nRFC"]
    for every_rank_active in [(cycles,), (cycles, 2 * cycles)]:
        assert command_energy_pj(active, counts, *every_rank_active) == command_energy_pj(
            base, counts, *every_rank_active
        )
    e = base.energy
    per_cycle = e.vdd_v * e.devices * base.tck_ns * (e.idd3n_ma - e.idd2n_ma)
    for precharged in (10.0, 5 * nrfc + 7.0):
        raised = command_energy_pj(active, counts, cycles, 2 * cycles - precharged)
        kept = command_energy_pj(base, counts, cycles, 2 * cycles - precharged)
        added = raised["background"] - kept["background"]
        assert added == pytest.approx(per_cycle * min(precharged, 5 * nrfc), rel=1e-9)
