"""The engines' count of the cycles a bank had a row open, summed over the banks (DRAMPower's
bank-wise background), against the same sum taken from the command log; and the energy that
rests on it, DRAMPower 6's DDR5 formulas at its bank-wise factor rho, recomputed by hand.

DRAMPower (``core_calculation_DDR5.cpp``): I_rho = rho (IDD3N - IDD2N) + IDD2N; I_1 = (IDD3N +
(B - 1) I_rho) / B; an ACT and its PRE IDD0 tRC - IDD2N tRP - I_1 tRAS (its IBeta cancels);
background I_rho over the rank's active time, (I_1 - I_rho) over each bank's, IDD2N over the
precharged time. At rho = 1 it is DRAMsim3's model, which the kit reproduces bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from memref import dram_ref_dir, load_cases

from nmp.errors import NmpError
from nmp.memory import load_memory, read_trace, replay
from nmp.memory.command_log import logged_run
from nmp.memory.counters import C_BANK_OPEN
from nmp.memory.standards import COMMANDS
from nmp.memory.stats import command_energy_pj
from nmp.reference import case_memory_spec

ACT, PREPB, PREAB, RDA, WRA = (COMMANDS.index(c) for c in ("ACT", "PREpb", "PREab", "RDA", "WRA"))
CASES = {c["id"]: c for c in load_cases()}
# one channel each (the log holds channel 0): one and two ranks, DDR4 and DDR5
ONE_CHANNEL = (
    "emb_zipf_a0.8_r1m_rb64_p40@ddr4_1r",
    "random_rw50_4g@ddr4_2r",
    "rmw_simple_rb64@ddr5_1r",
)


def _run(case_id: str, **changes):
    case = CASES[case_id]
    spec = case_memory_spec(case["memory_args"])
    run = logged_run(spec, read_trace(dram_ref_dir() / case["trace"]), **changes)
    return spec, run.out, run.log


def _open_cycles_from_log(log: np.ndarray, banks_per_rank: int, until: int, issued) -> int:
    """Each bank's open spans (ACT to its PREpb, RDA / WRA, or its rank's PREab) up to
    ``until``, over the commands ``issued(clk)`` keeps."""
    opened: dict[int, int] = {}
    total = 0
    for clk, cmd, rk, bk, _ in log:
        if not issued(clk):
            break
        if cmd == ACT:
            opened[bk] = clk
        elif cmd in (PREPB, RDA, WRA):
            total += clk - opened.pop(bk)
        elif cmd == PREAB:
            for b in [b for b in opened if b // banks_per_rank == rk]:
                total += clk - opened.pop(b)
    return total + sum(until - t for t in opened.values())


@pytest.mark.parametrize("case_id", ONE_CHANNEL)
@pytest.mark.parametrize("changes", [{}, {"closed_row": 1}], ids=["open", "closed"])
def test_the_bank_open_count_is_the_logs_open_spans(dram_ref, case_id, changes):
    spec, out, log = _run(case_id, **changes)
    status, cycles, clk_end, snap, final = out[:5]
    banks = spec.org.banks_per_rank
    assert final[C_BANK_OPEN] == _open_cycles_from_log(log, banks, clk_end, lambda c: True)
    # the snapshot at Ramulator's end holds the commands issued up to `cycles` (its counts
    # say so); the banks open then close there
    assert snap[: len(COMMANDS)].sum() == np.count_nonzero(log[:, 0] <= cycles)
    assert snap[C_BANK_OPEN] == _open_cycles_from_log(log, banks, cycles, lambda c: c <= cycles)
    # a rank is active while any of its banks is open: at most all of them, at least one
    assert out[9].sum() <= final[C_BANK_OPEN] <= banks * out[9].sum()


@pytest.fixture(scope="module")
def ddr5():
    return load_memory("ddr5-4800-40")


def _drampower_pj(spec, rho: float, cycles: float, active: float, bank_open: float):
    """DRAMPower's DDR5 figures (no VPP domain here) for one ACT + PRE and the background, in
    pJ: V x mA x ns."""
    e, t, tck = spec.energy, spec.timing, spec.tck_ns
    banks, scale = spec.org.banks_per_rank, e.vdd_v * e.devices * tck
    i_rho = rho * (e.idd3n_ma - e.idd2n_ma) + e.idd2n_ma
    i_one = (e.idd3n_ma + (banks - 1) * i_rho) / banks
    act = scale * (e.idd0_ma * t["nRC"] - e.idd2n_ma * t["nRP"] - i_one * t["nRAS"])
    total = cycles * spec.org.channels * spec.org.ranks
    background = scale * (
        i_rho * active + (i_one - i_rho) * bank_open + e.idd2n_ma * (total - active)
    )
    return act, background


@pytest.mark.parametrize("rho", [0.0, 0.25, 0.5, 1.0])
def test_act_and_background_are_drampowers_at_rho(ddr5, rho):
    spec = load_memory(ddr5, overrides={"energy.bank_wise_rho": rho})
    cycles, active, bank_open = 100_000.0, 60_000.0, 150_000.0
    got = command_energy_pj(spec, {"ACT": 1}, cycles, active, bank_open)
    act, background = _drampower_pj(spec, rho, cycles, active, bank_open)
    assert got["act"] == pytest.approx(act, rel=1e-12)
    assert got["background"] == pytest.approx(background, rel=1e-12)


def test_rho_one_is_dramsim3s_model_bit_for_bit(ddr5):
    # IDD3N over the active cycles whatever the banks, and an ACT less IDD3N over tRAS
    e, t = ddr5.energy, ddr5.timing
    scale = e.vdd_v * e.devices * ddr5.tck_ns
    total = 100_000.0 * ddr5.org.channels * ddr5.org.ranks
    for bank_open in (0.0, 60_000.0, None):
        got = command_energy_pj(ddr5, {"ACT": 1}, 100_000.0, 60_000.0, bank_open)
        assert got["background"] == scale * (
            e.idd3n_ma * 60_000.0 + e.idd2n_ma * (total - 60_000.0)
        )
        assert got["act"] == scale * (
            e.idd0_ma * t["nRC"] - (e.idd3n_ma * t["nRAS"] + e.idd2n_ma * t["nRP"])
        )


def test_without_a_bank_count_every_bank_of_an_active_rank_is_open(ddr5):
    # the upper bound: IDD3N over the active cycles at any rho (the arch models' replays sum
    # their streams' commands and take every rank as active)
    spec = load_memory(ddr5, overrides={"energy.bank_wise_rho": 0.0})
    e, scale = spec.energy, spec.energy.vdd_v * spec.energy.devices * spec.tck_ns
    total = 100_000.0 * spec.org.channels * spec.org.ranks
    got = command_energy_pj(spec, {}, 100_000.0, 60_000.0)
    assert got["background"] == pytest.approx(
        scale * (e.idd3n_ma * 60_000.0 + e.idd2n_ma * (total - 60_000.0)), rel=1e-12
    )


def test_a_replays_energy_follows_its_own_bank_count(dram_ref):
    case = CASES["emb_zipf_a0.8_r1m_rb64_p40@ddr4_1r"]
    base = case_memory_spec(case["memory_args"])
    reqs = read_trace(dram_ref_dir() / case["trace"])
    runs = {}
    for rho in (1.0, 0.5, 0.0):
        spec = load_memory(base, overrides={"energy.bank_wise_rho": rho})
        st = replay(reqs, spec, drain=True)
        act, background = _drampower_pj(
            spec, rho, st.cycles_drained, st.active_cycles, st.bank_open_cycles
        )
        assert st.energy_breakdown_pj["act"] == pytest.approx(act * st.cmd_counts["ACT"])
        assert st.energy_breakdown_pj["background"] == pytest.approx(background)
        runs[rho] = st
    # the same run (timing does not depend on rho); fewer banks open than all: less background
    assert len({(s.cycles_drained, s.bank_open_cycles) for s in runs.values()}) == 1
    assert runs[0.0].bank_open_cycles < base.org.banks_per_rank * runs[0.0].active_cycles
    bg = [runs[r].energy_breakdown_pj["background"] for r in (1.0, 0.5, 0.0)]
    assert bg[0] > bg[1] > bg[2]


# Micron's 16Gb DDR5 die rev A at 4800 as gem5 quotes it (DDR5_4400_4x8): IDD3N (all banks
# open) above its one-bank IDD0. DRAMsim3's activation term is negative for it; DRAMPower's at
# rho 0.5 (its test memspec's) is not.
MICRON = {"idd0_ma": 122.0, "idd2n_ma": 92.0, "idd3n_ma": 142.0, "idd4r_ma": 530.0}
MICRON = {f"energy.{k}": v for k, v in (MICRON | {"idd4w_ma": 479.0, "idd5ab_ma": 277.0}).items()}


def test_a_datasheet_set_needs_a_bank_wise_factor(ddr5):
    with pytest.raises(NmpError, match="energy.idd0_ma"):
        load_memory(ddr5, overrides=MICRON)
    spec = load_memory(ddr5, overrides={**MICRON, "energy.bank_wise_rho": 0.5})
    assert command_energy_pj(spec, {"ACT": 1}, 0.0)["act"] > 0


@pytest.mark.parametrize("rho", [-0.1, 1.5])
def test_rho_outside_zero_one_is_refused(ddr5, rho):
    with pytest.raises(NmpError, match="bank_wise_rho"):
        load_memory(ddr5, overrides={"energy.bank_wise_rho": rho})
