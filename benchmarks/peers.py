"""The DRAM engine against its peers in the same run: Ramulator 2.1 and DRAMsim3 replay the
reference cases of ``data/reference/dram/`` beside ``nmp replay``, alternating, as a whole
process and in process, with the ratios per memory configuration (issue 31).

Peers are found through environment variables, each the root of a built checkout (never part of
this repository; build them elsewhere):

- ``NMP_RAMULATOR2``: CMU-SAFARI/ramulator2 at the commit of ``data/reference/dram/README.md``
  (c5b1c3a), built with its Python bindings (``cmake -DCMAKE_BUILD_TYPE=Release .. && make``:
  ``python/ramulator/_ramulator*.so``). It is driven as the reference was, through its Python
  API, with the reference's configuration (``cases.json``'s ``memory_configs`` and
  ``controller_common``): one script per case, run by this interpreter (it must be the Python
  the bindings were built for).
- ``NMP_DRAMSIM3``: umd-memsys/DRAMsim3 (2981759), built (``libdramsim3.so`` in its root). It is
  driven as the reference was: the shipped config with the case's overrides (unified queue where
  the reference's split-queue run deadlocked), through its library API by an in-order trace
  injector (below, compiled here with ``$CXX``/``c++`` at first use into a temporary folder):
  each memory cycle it offers up to ``transactions_per_cycle`` lines in trace order, stopping
  at the first refused, then ticks.

What is timed, per case, the best of ``--repeat`` runs (the tools alternate within a run):

- whole process: ``nmp replay TRACE <memory_args> --json`` (this interpreter's ``nmp``), the
  Ramulator script, the DRAMsim3 injector; each reads the same plain-text trace (Ramulator's
  HBM2 trace has each 64-B line as its two 32-B requests, as in the reference runs).
- in process: ``replay(requests, spec, drain=False)`` in this process (the trace read before;
  address checks, decoding and statistics included), Ramulator's ``sim.run()``, the injector's
  loop; each stops when the last request is accepted (Ramulator's ``cycles``).

Every peer's cycle count is checked against the reference (and ours against Ramulator's). With
no peer present it says so and prints the recorded speeds (README §10) beside the in-process
one of this engine.

    .venv/bin/python benchmarks/peers.py [--repeat 3] [--filter hbm2] [--quick] [--threads 1]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _host import load, machine  # benchmarks/ is on sys.path when a script runs

from nmp.memory import read_trace, replay
from nmp.reference import case_memory_spec, dram_reference_dir

RAMULATOR_SCRIPT = r"""
import json, sys, time
import ramulator as R

trace, config = sys.argv[1], json.loads(sys.argv[2])
common = config["controller_common"]


def controller():
    dram_class = getattr(R.dram, config["standard"])
    org = {"rank": config["ranks"]} if "ranks" in config else {}
    dram = dram_class(
        org_preset=config["org_preset"], timing_preset=config["timing_preset"], **org
    )
    return getattr(R.controller, config["controller"])(
        dram=dram,
        scheduler=R.scheduler.FRFCFS(),
        refresh_manager=R.refresh_manager.AllBank(scatter_interval=0),
        row_policy=R.row_policy.Open(),
        addr_mapper=R.addr_mapper.RoBaRaCoCh(),
        read_buffer_size=common["read_buffer_size"],
        write_buffer_size=common["write_buffer_size"],
        priority_buffer_size=common["priority_buffer_size"],
        wr_low_watermark=common["wr_low_watermark"],
        wr_high_watermark=common["wr_high_watermark"],
    )


memory = R.memory_system.GenericDRAM(
    clock_ratio=config["memory_clock_ratio"],
    controllers=[controller() for _ in range(config["channels"])],
    channel_mapper=R.channel_mapper.CacheLineInterleave(
        interleave_bits=config["channel_interleave_bits"]
    ),
)
frontend = R.frontend.LoadStoreTrace(clock_ratio=config["frontend_clock_ratio"], path=trace)
sim = R.Simulation(frontend, memory)
t0 = time.perf_counter()
sim.run()
run_s = time.perf_counter() - t0
ctrl = sim.stats["memory_system"]["controller"]
cycles = (ctrl if isinstance(ctrl, dict) else ctrl[0])["cycles"]
print(json.dumps({"cycles": cycles, "run_s": run_s}))
"""

DRAMSIM3_INJECTOR = r"""
// In-order trace injector for DRAMsim3 (data/reference/dram/README.md section 7): each memory
// cycle, offer up to K lines in trace order, stopping at the first refused, then tick once.
// Prints the ticks done when the last line was accepted and the loop's wall time.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "dramsim3.h"

int main(int argc, char **argv) {
    if (argc != 5) return 2;
    const int K = std::stoi(argv[4]);
    std::vector<uint64_t> addr;
    std::vector<char> write;
    std::ifstream in(argv[3]);
    std::string op, hex;
    while (in >> op >> hex) {
        addr.push_back(std::stoull(hex, nullptr, 16));
        write.push_back(op == "ST");
    }
    auto *mem = dramsim3::GetMemorySystem(argv[1], argv[2], [](uint64_t) {}, [](uint64_t) {});
    const auto t0 = std::chrono::steady_clock::now();
    size_t i = 0;
    uint64_t clk = 0, idle = 0;
    while (i < addr.size()) {
        int offered = 0;
        for (int k = 0; k < K && i < addr.size(); k++, offered++) {
            if (!mem->WillAcceptTransaction(addr[i], write[i])) break;
            mem->AddTransaction(addr[i], write[i]);
            i++;
        }
        if (i == addr.size()) break;
        idle = offered ? 0 : idle + 1;
        if (idle > 10000000) {
            std::printf("{\"deadlock\": true, \"cycles_accept\": %llu}\n", (unsigned long long)clk);
            return 0;
        }
        mem->ClockTick();
        clk++;
    }
    const double run_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("{\"cycles_accept\": %llu, \"run_s\": %.9f}\n", (unsigned long long)clk, run_s);
    return 0;
}
"""


class Ramulator:
    name = "Ramulator2"

    def __init__(self, root: Path, work: Path) -> None:
        self.env = {**os.environ, "PYTHONPATH": str(root / "python")}
        self.script = work / "ramulator_case.py"
        self.script.write_text(RAMULATOR_SCRIPT)

    def argv(self, case: dict, traces: dict, config: dict) -> list[str]:
        split = config["requests_per_trace_line"] > 1
        path = traces[case["trace"], "halves" if split else "lines"]
        return [sys.executable, str(self.script), str(path), json.dumps(config)]

    def expected(self, case: dict) -> int:
        return case["ramulator2"]["cycles"]


class DRAMsim3:
    name = "DRAMsim3"

    def __init__(self, root: Path, work: Path) -> None:
        self.root, self.work = root, work
        lib = root / "libdramsim3.so"
        if not lib.exists():
            raise FileNotFoundError(f"{lib} (build DRAMsim3 first)")
        src = work / "injector.cc"
        src.write_text(DRAMSIM3_INJECTOR)
        self.binary = work / "dramsim3_injector"
        cxx = os.environ.get("CXX", "c++").split()
        subprocess.run(
            [*cxx, "-O2", "-std=c++14", f"-I{root / 'src'}", str(src), f"-L{root}", "-ldramsim3"]
            + [f"-Wl,-rpath,{root}", "-o", str(self.binary)],
            check=True,
            capture_output=True,
        )
        self.env = dict(os.environ)

    def config_file(self, case: dict, config: dict) -> Path:
        d3 = config["dramsim3"]
        overrides = dict(d3["overrides"])
        if (case.get("dramsim3") or {}).get("queue_variant") == "unified_queue":
            overrides["unified_queue"] = True  # the reference's rerun after a deadlock
        text = (self.root / "configs" / d3["base_config"]).read_text()
        for key, value in overrides.items():
            line = f"{key} = {value}"
            text, n = re.subn(rf"(?m)^{key}\s*=.*$", line, text)
            if not n:  # a key the file lacks (unified_queue): into its [system] section
                text = text.replace("[system]", f"[system]\n{line}", 1)
        path = self.work / f"{case['mem_config']}-{'_'.join(map(str, overrides.values()))}.ini"
        path.write_text(text)
        return path

    def argv(self, case: dict, traces: dict, config: dict) -> list[str] | None:
        if not config.get("dramsim3") or not case.get("dramsim3"):
            return None  # no DDR5 model
        out = self.work / "out"
        out.mkdir(exist_ok=True)
        k = str(config["dramsim3"]["transactions_per_cycle"])
        path = traces[case["trace"], "lines"]
        return [str(self.binary), str(self.config_file(case, config)), str(out), str(path), k]

    def expected(self, case: dict) -> int:
        return case["dramsim3"]["cycles_accept"]


def find_peers(work: Path) -> tuple[list, list[str]]:
    peers, notes = [], []
    for var, cls in (("NMP_RAMULATOR2", Ramulator), ("NMP_DRAMSIM3", DRAMsim3)):
        root = os.environ.get(var)
        if not root:
            notes.append(f"{cls.name}: not set (${var})")
            continue
        try:
            peers.append(cls(Path(root), work))
            notes.append(f"{cls.name}: {root}")
        except (OSError, subprocess.CalledProcessError) as exc:
            notes.append(f"{cls.name}: ${var}={root} not usable ({exc})")
    return peers, notes


def plain_traces(cases: list[dict], ref: Path, work: Path) -> dict:
    """The cases' traces as plain text: the lines, and (for HBM2's Ramulator runs) each line as
    its two 32-B requests."""
    out = {}
    for case in cases:
        name = case["trace"]
        if (name, "lines") in out:
            continue
        text = gzip.decompress((ref / name).read_bytes()).decode()
        lines = work / (Path(name).name.removesuffix(".gz"))
        lines.write_text(text)
        out[name, "lines"] = lines
        halves = []
        for line in text.splitlines():
            op, hex_ = line.split()
            a = int(hex_, 16)
            halves.append(f"{op} 0x{a:x}\n{op} 0x{a + 32:x}")
        path = lines.with_suffix(".halves")
        path.write_text("\n".join(halves) + "\n")
        out[name, "halves"] = path
    return out


def timed(argv: list[str], env: dict) -> tuple[float, dict]:
    t0 = time.perf_counter()
    res = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    return wall, json.loads(res.stdout.strip().splitlines()[-1])


def nmp_in_process(requests, spec) -> tuple[float, int]:
    t0 = time.perf_counter()
    stats = replay(requests, spec, drain=False)
    return time.perf_counter() - t0, stats.cycles


def summarize(rows: list[dict], peers: list) -> None:
    """Per memory configuration and overall: the peer's time over ours (median of the cases'
    ratios, and total over total), whole process and in process."""
    print("\nratios (peer time / nmp time; > 1: nmp is faster), per memory configuration:")
    print(
        f"{'config':10s} {'peer':11s} {'cases':>5s} {'whole: median':>14s} {'overall':>8s}"
        f" {'in-proc: median':>16s} {'overall':>8s}"
    )
    configs = sorted({r["config"] for r in rows}) + ["all"]
    for peer in peers:
        for cfg in configs:
            sel = [r for r in rows if (cfg == "all" or r["config"] == cfg) and peer.name in r]
            if not sel:
                continue
            whole = [r[peer.name]["whole"] / r["nmp"]["whole"] for r in sel]
            inproc = [r[peer.name]["inproc"] / r["nmp"]["inproc"] for r in sel]
            tw = sum(r[peer.name]["whole"] for r in sel) / sum(r["nmp"]["whole"] for r in sel)
            ti = sum(r[peer.name]["inproc"] for r in sel) / sum(r["nmp"]["inproc"] for r in sel)
            print(
                f"{cfg:10s} {peer.name:11s} {len(sel):5d} {statistics.median(whole):13.2f}x"
                f" {tw:7.2f}x {statistics.median(inproc):15.1f}x {ti:7.1f}x"
            )
    req = sum(r["requests"] for r in rows)
    t = sum(r["nmp"]["inproc"] for r in rows)
    tw = sum(r["nmp"]["whole"] for r in rows)
    print(
        f"\nnmp: {req / t / 1e6:.2f} M requests/s in process, {req / tw / 1e6:.3f} M/s as a "
        f"whole process ({len(rows)} cases, {req:,} requests)"
    )
    for peer in peers:
        sel = [r for r in rows if peer.name in r]
        if sel:
            n = sum(r["requests"] for r in sel)
            ti = sum(r[peer.name]["inproc"] for r in sel)
            tw = sum(r[peer.name]["whole"] for r in sel)
            print(
                f"{peer.name}: {n / ti / 1e3:.0f} k requests/s in process, "
                f"{n / tw / 1e3:.0f} k/s as a whole process ({len(sel)} cases)"
            )


def recorded(cases: list[dict], ref: Path) -> None:
    """No peer here: this engine in process against the speeds the reference recorded."""
    print("\nno peer build present: the speeds recorded with the reference data (README §10,")
    print("another run on a shared 2-core VM), beside this engine in process now:")
    by_cfg: dict[str, list] = {}
    for case in cases:
        spec = case_memory_spec(case["memory_args"])
        requests = read_trace(ref / case["trace"])
        replay(requests, spec, drain=False)
        t = min(nmp_in_process(requests, spec)[0] for _ in range(3))
        by_cfg.setdefault(case["mem_config"], []).append((case, t))
    print(
        f"{'config':10s} {'cases':>5s} {'nmp M req/s':>12s} {'Ramulator2 k/s':>15s} {'ratio':>7s}"
    )
    for cfg, items in sorted(by_cfg.items()):
        n = sum(c["ramulator2"]["requests"] for c, _ in items)
        t = sum(t for _, t in items)
        ram = sum(c["ramulator2"]["wall_s"] for c, _ in items)
        print(
            f"{cfg:10s} {len(items):5d} {n / t / 1e6:12.2f} {n / ram / 1e3:15.0f} {ram / t:6.1f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per case and tool (best taken)")
    ap.add_argument("--filter", default="", help="only cases whose id contains this")
    ap.add_argument("--quick", action="store_true", help="every fourth case only")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="nmp's threads per multi-channel replay (1: one core)",
    )
    a = ap.parse_args()
    os.environ["NMP_ENGINE_THREADS"] = str(a.threads)  # (this process and nmp replay's)
    ref = dram_reference_dir()
    data = json.loads((ref / "cases.json").read_text())
    cases = [c for c in data["cases"] if a.filter in c["id"]]
    if a.quick:
        cases = cases[::4]
    print(f"machine: {machine()}; load average (1/5/15 min) before: {load()}")
    print(f"nmp: {a.threads} thread(s) per multi-channel replay; the peers run on one")
    with tempfile.TemporaryDirectory(prefix="nmp-peers-") as tmp:
        work = Path(tmp)
        peers, notes = find_peers(work)
        for note in notes:
            print(f"peer {note}")
        if not peers:
            recorded(cases, ref)
            print(f"load average after: {load()}")
            return
        traces = plain_traces(cases, ref, work)
        nmp_argv = [sys.executable, "-m", "nmp", "replay"]
        nmp_env = dict(os.environ)
        rows = []
        print(
            f"\n{'case':46s} {'requests':>8s} {'nmp whole/in s':>15s}"
            + "".join(f" {p.name + ' whole/in s':>22s}" for p in peers)
        )
        for case in cases:
            cfg = data["memory_configs"][case["mem_config"]]
            config = {**cfg, "controller_common": data["controller_common"]}
            spec = case_memory_spec(case["memory_args"])
            requests = read_trace(ref / case["trace"])
            replay(requests, spec, drain=False)  # warm
            row = {"id": case["id"], "config": case["mem_config"]}
            row["requests"] = case["ramulator2"]["requests"]
            best: dict[str, dict[str, float]] = {}
            line_path = str(traces[case["trace"], "lines"])
            for _ in range(a.repeat):
                wall, out = timed([*nmp_argv, line_path, *case["memory_args"], "--json"], nmp_env)
                t_in, cycles = nmp_in_process(requests, spec)
                assert out["cycles"] == cycles == case["ramulator2"]["cycles"], case["id"]
                b = best.setdefault("nmp", {"whole": 1e9, "inproc": 1e9})
                b["whole"], b["inproc"] = min(b["whole"], wall), min(b["inproc"], t_in)
                for peer in peers:
                    argv = peer.argv(case, traces, config)
                    if argv is None:
                        continue
                    wall, out = timed(argv, peer.env)
                    got = out.get("cycles", out.get("cycles_accept"))
                    if got != peer.expected(case):
                        print(f"  {peer.name} {case['id']}: {got} cycles, recorded "
                              f"{peer.expected(case)}")  # fmt: skip
                    b = best.setdefault(peer.name, {"whole": 1e9, "inproc": 1e9})
                    b["whole"], b["inproc"] = min(b["whole"], wall), min(b["inproc"], out["run_s"])
            row.update(best)
            rows.append(row)
            cells = "".join(
                f" {best[p.name]['whole']:10.3f}/{best[p.name]['inproc']:<11.4f}"
                if p.name in best
                else f" {'-':>22s}"
                for p in peers
            )
            print(
                f"{case['id']:46s} {row['requests']:8d} {best['nmp']['whole']:6.3f}/"
                f"{best['nmp']['inproc']:<8.4f}{cells}"
            )
        print(f"load average after: {load()}")
        summarize(rows, peers)


if __name__ == "__main__":
    main()
