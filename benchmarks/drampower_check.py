"""The kit's DRAM energy beside DRAMPower's, on the same commands (printed, not asserted).

The kit prices a replay with DRAMsim3's IDD formulas, and at ``energy.bank_wise_rho`` below 1
with DRAMPower 6's bank-wise ones (``docs/dram-engine.md``). This script checks the second
against DRAMPower itself: it replays a reference case in the numba engine with every command
logged, writes that log as DRAMPower's command trace (CSV: cycle, command, rank, bank group,
bank, row, column, and a zero data word for reads and writes) and a memspec of the kit's preset
(its timings, its currents on VDD, its organization and devices, rho as ``factRho``), runs
DRAMPower's command-line tool on them, and prints each energy term of both side by side: an
ACT with its PRE, reads, writes, all-bank refreshes, the background.

The kit runs with DRAMPower's refresh accounting (``energy.refresh_background = "active"``:
each of a rank's banks active for tRFC after an all-bank refresh, so that a refresh draws IDD5B
in all); its core energy with DRAMsim3's, the kit's default (the rank precharged then, IDD5B -
IDD3N above an IDD2N background: (IDD3N - IDD2N) x tRFC less a refresh), is printed beside it.
One difference is expected and printed with its size: DRAMPower charges a PRE only where one
came, the kit each ACT's PRE with the ACT: the banks still open at the end.

DRAMPower, built from source (commit 58be10b, the last with a command-line tool on
DRAMUtils v1.0, whose DDR4 and DDR5 energy formulas are those of v6.2):

    git clone https://github.com/tukl-msd/DRAMPower && git -C DRAMPower checkout 58be10b
    git clone https://github.com/tukl-msd/DRAMUtils && git -C DRAMUtils checkout v1.0
    cmake -S DRAMPower -B DRAMPower/build -DCMAKE_BUILD_TYPE=Release -DDRAMPOWER_BUILD_CLI=ON \\
        -DDRAMUTILS_DIR=$PWD/DRAMUtils
    make -C DRAMPower/build -j2

    python benchmarks/drampower_check.py --drampower DRAMPower [--rho 1,0.5,0] [--case ID ...]
        [--record data/reference/dram/drampower.json]

``--record`` keeps DRAMPower's terms of every run (with its commit): the file
``tests/memory/test_drampower_record.py`` holds the kit's energy to, on machines without
DRAMPower (CI).
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _host import load, machine  # benchmarks/ is on sys.path when a script runs
from peer_build import checkout_commit

from nmp.errors import NmpError
from nmp.fileio import atomic_write_text
from nmp.memory import load_memory, read_trace
from nmp.memory.command_log import logged_run
from nmp.memory.standards import COMMANDS
from nmp.memory.stats import command_energy_pj
from nmp.reference import case_memory_spec, dram_reference_dir, read_cases
from nmp.validate.drampower_energy import RECORD_KIND, drampower_overrides

# the kit's commands as DRAMPower's trace names them
TRACE_NAMES = {
    "ACT": "ACT",
    "PREpb": "PRE",
    "PREab": "PREA",
    "RD": "RD",
    "WR": "WR",
    "RDA": "RDA",
    "WRA": "WRA",
    "REFab": "REFA",
}
DATA_WORD = "00" * 64  # reads and writes carry data (its toggles are interface energy only)
# one channel each (the log holds channel 0), open rows; DDR4 and DDR5, one and two ranks
DEFAULT_CASES = (
    "emb_zipf_a0.8_r1m_rb64_p40@ddr5_1r",
    "random_rw50_4g@ddr5_1r",
    "emb_zipf_a0.8_r1m_rb64_p40@ddr4_1r",
    "random_rw50_4g@ddr4_2r",
)


def write_trace(path: Path, log, spec, end: int) -> None:
    banks, per_group = spec.org.banks_per_rank, spec.org.banks
    lines = []
    for clk, cmd, rank, bank, row in log.tolist():
        name = TRACE_NAMES[COMMANDS[cmd]]
        local = bank % banks
        line = f"{clk},{name},{rank},{local // per_group},{local},{max(row, 0)},0"
        lines.append(line + f",{DATA_WORD}" if name in ("RD", "WR", "RDA", "WRA") else line)
    lines.append(f"{end},END,0,0,0,0,0")
    path.write_text("\n".join(lines) + "\n")


def write_memspec(path: Path, template: Path, spec) -> None:
    """DRAMPower's memspec of ``spec``: its test memspec of the standard, with the preset's
    organization, timings, currents (VDD only; VPP's are 0) and rho."""
    doc = json.loads(template.read_text())
    m, o, t, e = doc["memspec"], spec.org, spec.timing, spec.energy
    m["memarchitecturespec"].update(
        nbrOfBankGroups=o.bankgroups,
        nbrOfBanks=o.banks_per_rank,
        nbrOfRanks=o.ranks,
        nbrOfDevices=int(e.devices),
        nbrOfRows=o.rows,
        nbrOfColumns=o.columns,
        burstLength=2 * t["nBL"],  # nBL cycles at two transfers a cycle
        maxBurstLength=2 * t["nBL"],
        dataRate=2,
    )
    power = m["mempowerspec"]
    refresh_key = "idd5b" if "idd5b" in power else "idd5B"
    power.update(
        {
            "vdd": e.vdd_v,
            "idd0": e.idd0_ma * 1e-3,
            "idd2n": e.idd2n_ma * 1e-3,
            "idd3n": e.idd3n_ma * 1e-3,
            "idd4r": e.idd4r_ma * 1e-3,
            "idd4w": e.idd4w_ma * 1e-3,
            refresh_key: e.idd5ab_ma * 1e-3,
            "iBeta_vdd": e.idd0_ma * 1e-3,  # (cancels between an ACT and its PRE)
        }
    )
    timing = m["memtimingspec"]
    timing.update(
        tCK=spec.tck_ns * 1e-9,
        RAS=t["nRAS"],
        RCD=t["nRCD"],
        RTP=t["nRTP"],
        WL=t["nCWL"],
        WR=t["nWR"],
        RP=t["nRP"],
        RFC1=t["nRFC"],
    )
    if "RFC1_slr" in timing:
        timing["RFC1_slr"] = t["nRFC"]
    m["bankwisespec"] = {"factRho": e.bank_wise_rho}
    path.write_text(json.dumps(doc, indent=1))


def drampower_terms(cli: Path, trace: Path, memspec: Path, out: Path) -> dict[str, float]:
    """DRAMPower's core energy by term, pJ."""
    subprocess.run(
        [str(cli), str(trace), str(memspec), "--json", str(out)], check=True, capture_output=True
    )
    core = json.loads(out.read_text())["CoreEnergy"]
    s: dict[str, float] = {}
    for bank in core["BankEnergy"]:
        for k, v in bank.items():
            s[k] = s.get(k, 0.0) + v
    pj = 1e12
    return {
        "act+pre": (s["ACT"] + s["PRE"] + s["PRE_RDA"] + s["PRE_WRA"]) * pj,
        "rd": (s["RD"] + s["RDA"]) * pj,
        "wr": (s["WR"] + s["WRA"]) * pj,
        "ref": s["REF_AB"] * pj,
        "background": (s["BG_ACT"] + s["BG_PRE"] + core["E_bg_act_shared"]) * pj,
    }


def compare(case: dict, rho: float, cli: Path, templates: Path, work: Path) -> dict[str, float]:
    """Print the kit's terms over DRAMPower's for ``case`` at ``rho`` (the kit with DRAMPower's
    refresh accounting; its core also with DRAMsim3's, its default); DRAMPower's terms."""
    base = case_memory_spec(case["memory_args"])
    spec = load_memory(base, overrides=drampower_overrides(rho))
    dramsim3 = load_memory(base, overrides={"energy.bank_wise_rho": rho})
    run = logged_run(spec, read_trace(dram_reference_dir() / case["trace"]))
    write_trace(work / "trace.csv", run.log, spec, run.end_cycle)
    template = templates / f"{spec.standard.lower()}.json"
    write_memspec(work / "memspec.json", template, spec)
    theirs = drampower_terms(cli, work / "trace.csv", work / "memspec.json", work / "out.json")
    priced = (run.counts, run.end_cycle, run.active_cycles, run.bank_open_cycles)
    kit = command_energy_pj(spec, *priced)
    ours = {"act+pre": kit["act"], **{k: kit[k] for k in ("rd", "wr", "ref", "background")}}
    cells = " ".join(f"{k} {ours[k] / theirs[k]:.5f}" if theirs[k] else f"{k} -" for k in ours)
    core = sum(ours.values()) / sum(theirs.values())
    as_dramsim3 = command_energy_pj(dramsim3, *priced)
    core_dramsim3 = (sum(as_dramsim3.values()) - as_dramsim3["io"]) / sum(theirs.values())
    print(
        f"{case['id']:40s} rho {rho:4.2f}  kit/DRAMPower: {cells}; core {core:.5f}, with "
        f"DRAMsim3's refresh accounting {core_dramsim3:.5f} ({run.counts['REF']} REF, "
        f"{run.counts['ACT']} ACT)"
    )
    return theirs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--drampower", type=Path, required=True, help="DRAMPower's checkout")
    ap.add_argument("--cli", type=Path, help="its drampower_cli (default: build/bin/ in it)")
    ap.add_argument("--rho", default="1,0.5,0", help="bank-wise factors, comma-separated")
    ap.add_argument("--case", action="append", help="reference case ids (one channel)")
    ap.add_argument("--record", type=Path, help="write DRAMPower's terms of every run (JSON)")
    a = ap.parse_args()
    cli = a.cli or a.drampower / "build" / "bin" / "drampower_cli"
    templates = a.drampower / "tests" / "tests_drampower" / "resources"
    if not cli.exists() or not templates.is_dir():
        sys.exit(f"no {cli} or no {templates}: build DRAMPower as this script's docstring says")
    try:
        rhos = [float(x) for x in a.rho.split(",")]
    except ValueError:
        sys.exit(f"--rho: comma-separated numbers in [0, 1], got {a.rho!r}")
    if not all(0.0 <= r <= 1.0 for r in rhos):
        sys.exit(f"--rho: each must lie in [0, 1], got {a.rho!r}")
    cases = {c["id"]: c for c in read_cases(dram_reference_dir())["cases"]}
    chosen = a.case or list(DEFAULT_CASES)
    for case_id in chosen:
        if case_id not in cases:
            sys.exit(f"--case: no reference case {case_id!r}")
        spec = case_memory_spec(cases[case_id]["memory_args"])
        if spec.org.channels != 1:
            sys.exit(f"--case {case_id}: one channel only (the engine logs channel 0)")
        if not (templates / f"{spec.standard.lower()}.json").is_file():
            sys.exit(f"--case {case_id}: DRAMPower has no {spec.standard} memspec in {templates}")
    print(f"machine: {machine()}; load {load()}")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for case_id in chosen:
            for rho in rhos:
                try:
                    terms = compare(cases[case_id], rho, cli, templates, Path(tmp))
                except NmpError as exc:  # (a log that cannot hold the run, say)
                    sys.exit(f"--case {case_id}: {exc}")
                runs.append({"case": case_id, "rho": rho, "drampower_pj": terms})
    if a.record:
        record = {
            "kind": RECORD_KIND,
            "drampower_commit": checkout_commit(a.drampower),
            "date": datetime.date.today().isoformat(),
            "terms": "core energy by term, pJ, DRAMPower's command-line tool on the numba "
            "engine's full command log (drain, open rows) and the preset as its memspec",
            "runs": runs,
        }
        atomic_write_text(a.record, json.dumps(record, indent=1) + "\n")
        print(f"recorded: {a.record}")


if __name__ == "__main__":
    main()
