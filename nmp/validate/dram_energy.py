"""The kit's DRAM energy against DRAMsim3's on the reference cases (``dram.dramsim3-energy``).

DRAMsim3 measured every DDR4 and HBM2 reference case (``cases.json``'s ``dramsim3`` block,
data/reference/dram/README.md section 7) and reports its total energy with the command counts
and the cycles behind it. The kit charges the same IDD formulas (:mod:`nmp.memory.stats`), so
the kit's own code, given DRAMsim3's configuration, counts and cycles, must give DRAMsim3's
total for some share of rank-cycles with a bank open: the one term DRAMsim3 does not report.
The check solves for that share; a share outside [0, 1] means a command's energy or the
background differs from DRAMsim3's. Beside it: the kit's own active share of the same trace
(its own schedule, which is Ramulator 2's) and the energy that share predicts, and the kit's
energy end to end on its own schedule, whose gap to DRAMsim3's is the two simulators' schedules
and organizations, not the formulas.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmp.reference import case_memory_spec, dram_reference_dir, read_cases
from nmp.validate.checks import missing_reference
from nmp.validate.result import CheckResult, builtin

# What DRAMsim3 ran that the kit's presets do not (README section 7, DRAMsim3 @2981759's
# configs/DDR4_8Gb_x8_3200.ini and HBM2_8Gb_x128.ini; the IDD sets are the presets' own).
# DDR4: tRFC 560 cycles against Ramulator's 576. HBM2: a 128-bit legacy channel (one "rank"
# per channel, devices = bus width / device width = 1) with tRFC 260, where the kit models
# two 64-bit pseudo channels of half a legacy channel's current each.
DRAMSIM3_CONFIG: dict[str, dict[str, Any]] = {
    "DDR4": {"timing.nRFC": 560},
    "HBM2": {"timing.nRFC": 260, "org.ranks": 1, "energy.devices": 1.0},
}

# A share of active rank-cycles is a fraction: float rounding of sums of 1e8-1e9 pJ aside
SHARE_SLACK = 1e-6

# How far the energy at the kit's own active share may lie from DRAMsim3's (chosen, above what
# the organizations leave): DDR4's ranks are DRAMsim3's, and its worst case lies 0.12 % off
# (two ranks streaming); HBM2's active share is a pseudo channel's against DRAMsim3's legacy
# channel's, half of it where one bank of one pseudo channel works (1.3 % of the energy).
PREDICTED_TOLERANCE = {"DDR4": 0.005, "HBM2": 0.02}


# Where the kit's energy on its own schedule parts from DRAMsim3's (docs/dram-engine.md)
END_TO_END = {
    "DDR4": "end to end, the gap is DRAMsim3's scheduler, not the formulas: it merges reads "
    "to a pending address, its per-bank queues find more row hits, it drains writes its own "
    "way (docs/dram-engine.md)",
    "HBM2": "end to end, the gap is the organization and the schedule: the kit's pseudo "
    "channel opens a 1-KiB page for half a legacy channel's activation energy, and DRAMsim3's "
    "128-bit legacy channel runs the traces in other cycle counts (docs/dram-engine.md)",
}


@dataclass(frozen=True)
class CaseEnergy:
    """One reference case: DRAMsim3's energy, the kit's formulas at DRAMsim3's counts, and the
    kit's own replay of the trace."""

    case_id: str
    dramsim3_pj: float  # DRAMsim3's total at the kit's tCK (its raw V x mA x cycles x tCK)
    no_rank_active_pj: float  # the kit's formulas at DRAMsim3's counts, every rank precharged
    every_rank_active_pj: float  # the same, every rank with a bank open every cycle
    own_active_share: float  # the kit's replay: rank-cycles with a bank open, of all
    own_pj: float  # the kit's replay end to end (its own schedule; I/O energy apart)
    dramsim3_reported_pj: float  # DRAMsim3's energy_pJ (its own tCK)

    @property
    def implied_share(self) -> float:
        """The share of active rank-cycles at which the kit's formulas give DRAMsim3's total."""
        span = self.every_rank_active_pj - self.no_rank_active_pj
        return (self.dramsim3_pj - self.no_rank_active_pj) / span

    @property
    def predicted_pj(self) -> float:
        """The kit's formulas at DRAMsim3's counts and the kit's own active share."""
        span = self.every_rank_active_pj - self.no_rank_active_pj
        return self.no_rank_active_pj + self.own_active_share * span

    @property
    def own_gap(self) -> float:
        """The kit's energy end to end over DRAMsim3's, less one."""
        return self.own_pj / self.dramsim3_reported_pj - 1.0


def _core_pj(breakdown: dict[str, float]) -> float:
    return sum(v for k, v in breakdown.items() if k != "io")  # DRAMsim3 has no I/O term


def case_energy(case: dict[str, Any], folder: Path, standard: str) -> CaseEnergy:
    """The kit's formulas at ``case``'s DRAMsim3 counts, and the kit's replay of its trace."""
    # numba: loaded on use (start-up time)
    from nmp.memory import command_energy_pj, load_memory, replay

    ds3 = case["dramsim3"]
    spec = case_memory_spec(case["memory_args"])
    as_dramsim3 = load_memory(spec, overrides=DRAMSIM3_CONFIG[standard])
    counts = {
        "ACT": ds3["num_act_cmds"],
        "RD": ds3["num_read_cmds"],
        "WR": ds3["num_write_cmds"],
        "REF": ds3["num_ref_cmds"],
    }
    # DRAMsim3's statistics are taken when the last read's data returned (README section 7)
    cycles = ds3["cycles_reads_done"]
    low = _core_pj(command_energy_pj(as_dramsim3, counts, cycles, active_cycles=0.0))
    high = _core_pj(command_energy_pj(as_dramsim3, counts, cycles, active_cycles=None))
    own = replay(str(folder / case["trace"]), spec, drain=True)
    ranks = spec.org.channels * spec.org.ranks
    return CaseEnergy(
        case_id=case["id"],
        dramsim3_pj=ds3["total_energy_raw"] * as_dramsim3.tck_ns,
        no_rank_active_pj=low,
        every_rank_active_pj=high,
        own_active_share=own.active_cycles / (ranks * own.cycles_drained),
        own_pj=_core_pj(own.energy_breakdown_pj),
        dramsim3_reported_pj=ds3["energy_pJ"],
    )


def standard_results(
    folder: Path, data: dict[str, Any] | None = None
) -> dict[str, list[CaseEnergy]]:
    """Every case DRAMsim3 measured, by standard (``data``: ``folder``'s cases.json, read here
    where not given)."""
    if data is None:
        data = read_cases(folder)
    by_standard: dict[str, list[CaseEnergy]] = defaultdict(list)
    for case in data["cases"]:
        if not case.get("dramsim3"):
            continue
        standard = data["memory_configs"][case["mem_config"]]["standard"]
        by_standard[standard].append(case_energy(case, folder, standard))
    return dict(sorted(by_standard.items()))


def _row(standard: str, results: list[CaseEnergy], source: str) -> CheckResult:
    n = len(results)
    shares = [r.implied_share for r in results]
    inside = sum(-SHARE_SLACK <= s <= 1 + SHARE_SLACK for s in shares)
    share_gap = max(abs(r.implied_share - r.own_active_share) for r in results)
    predicted = max(abs(r.predicted_pj / r.dramsim3_pj - 1) for r in results)
    tolerance = PREDICTED_TOLERANCE[standard]
    gaps = [r.own_gap for r in results]
    model = (
        f"{inside}/{n} inside the background's bounds at DRAMsim3's counts, active share "
        f"{min(shares):.3f}-{max(shares):.3f} (the kit's replay: within {share_gap:.3f}; "
        f"energy at its share within {100 * predicted:.2f} %, tolerance {100 * tolerance:g} %); "
        f"the kit's own schedule end to end: median {100 * statistics.median(gaps):+.1f} %, "
        f"{100 * min(gaps):+.1f} to {100 * max(gaps):+.1f} %"
    )
    return CheckResult(
        id=f"dram.dramsim3-energy.{standard.lower()}",
        source=source,
        published=f"total energy of {n} {standard} cases with its command counts and cycles",
        model=model,
        verdict="agrees" if inside == n and predicted <= tolerance else "disagrees",
        group="simulator",
        claim=f"the kit's DRAM energy formulas give DRAMsim3's energy on {standard}",
        explanation=END_TO_END[standard],
    )


@builtin("dram.dramsim3-energy")
def dram_energy_vs_dramsim3(quick: bool) -> list[CheckResult]:
    """The DRAM energy formulas on every case DRAMsim3 measured: one row per standard."""
    folder = dram_reference_dir()
    path = folder / "cases.json"
    if not path.is_file():
        return [
            missing_reference(
                "dram.dramsim3-energy", "DRAMsim3 reference cases", "total energy per case"
            )
        ]
    data = read_cases(folder)
    sim = data.get("simulators", {}).get("dramsim3", "DRAMsim3")
    source = f"{sim}; {path.parent.name}/cases.json"
    return [_row(std, res, source) for std, res in standard_results(folder, data).items()]
