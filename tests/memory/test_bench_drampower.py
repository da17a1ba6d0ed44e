"""benchmarks/drampower_check.py's inputs to DRAMPower (run by a user who built it; CI has no
DRAMPower): the command trace holds every command the engine logged, in DRAMPower's names and
bank numbering, and the memspec carries the preset's figures and rho."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from memref import dram_ref_dir, load_cases

from nmp.memory import load_memory, read_trace
from nmp.memory.command_log import logged_run
from nmp.reference import case_memory_spec

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import drampower_check as dpc  # type: ignore[import-not-found]  # noqa: E402

CASE = "random_rw50_4g@ddr4_2r"


def test_the_trace_is_the_engines_log_in_drampowers_terms(dram_ref, tmp_path):
    case = {c["id"]: c for c in load_cases()}[CASE]
    spec = case_memory_spec(case["memory_args"])
    reqs = read_trace(dram_ref_dir() / case["trace"])
    log, _, counts, end, active, bank_open = logged_run(spec, reqs)
    dpc.write_trace(tmp_path / "t.csv", log, spec, end)
    rows = [line.split(",") for line in (tmp_path / "t.csv").read_text().splitlines()]
    names = [r[1] for r in rows]
    assert names.count("ACT") == counts["ACT"] and names.count("REFA") == counts["REF"]
    assert names.count("RD") + names.count("WR") == counts["RD"] + counts["WR"]
    assert rows[-1][:2] == [str(end), "END"] and 0 < active <= bank_open
    banks = spec.org.banks_per_rank
    for r in rows[:-1]:
        assert 0 <= int(r[4]) < banks and int(r[3]) == int(r[4]) // spec.org.banks
        assert len(r) == (8 if r[1] in ("RD", "WR") else 7)  # a data word with reads and writes
    assert {int(r[2]) for r in rows[:-1]} == {0, 1}  # both ranks


def test_the_memspec_carries_the_presets_figures(tmp_path):
    spec = load_memory("ddr5-4800-40", overrides={"energy.bank_wise_rho": 0.25})
    template = tmp_path / "ddr5.json"
    template.write_text(
        json.dumps(
            {
                "memspec": {
                    "memarchitecturespec": {},
                    "mempowerspec": {"idd5b": 0.0},
                    "memtimingspec": {"RFC1_slr": 0},
                }
            }
        )
    )
    dpc.write_memspec(tmp_path / "m.json", template, spec)
    m = json.loads((tmp_path / "m.json").read_text())["memspec"]
    assert m["bankwisespec"] == {"factRho": 0.25}
    assert (
        m["memarchitecturespec"]["nbrOfBanks"] == 32 and m["memarchitecturespec"]["nbrOfRanks"] == 2
    )
    assert m["memarchitecturespec"]["burstLength"] == 16  # BL16: nBL 8 cycles
    assert m["mempowerspec"]["idd0"] == 60.0e-3 and m["mempowerspec"]["idd5b"] == 270.0e-3
    assert m["memtimingspec"]["RAS"] == 76 and m["memtimingspec"]["RFC1_slr"] == 710
    assert m["memtimingspec"]["tCK"] == spec.tck_ns * 1e-9
