"""The DRAM engine against its peers in the same run: Ramulator 2.1 and DRAMsim3 replay the
reference cases of ``data/reference/dram/`` beside ``nmp replay``, alternating, as a whole
process and in process, by wall time and by CPU time, with the ratios per standard (issues 31,
43).

The peers are built from their sources, at the reference's commits, outside this repository:
``--build`` clones and builds them into ``--peer-dir`` (default ``~/.cache/nmp-peers``) as
follows, and without it the script uses the builds found there (or at ``$NMP_RAMULATOR2`` /
``$NMP_DRAMSIM3``, each the root of a built checkout):

- Ramulator 2.1: ``git clone https://github.com/CMU-SAFARI/ramulator2 ramulator2 && git -C
  ramulator2 checkout c5b1c3a``; ``cmake -S ramulator2 -B ramulator2/build
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-O3 -DPython_EXECUTABLE=<this python>`` and
  ``make -C ramulator2/build -j N``: it leaves ``python/ramulator/_ramulator*.so``, the Python
  bindings the reference drove it through (they must be built for this interpreter). Its CMake
  fetches yaml-cpp 0.9.0, fmt 10.2.1 and nanobind 2.4.0 (with its ext/robin_map submodule)
  from GitHub; without a network, ``--deps DIR`` holding checkouts ``yaml-cpp``, ``fmt`` and
  ``nanobind`` at those tags is passed as ``-DFETCHCONTENT_SOURCE_DIR_<NAME>=DIR/<name>``.
- DRAMsim3: ``git clone https://github.com/umd-memsys/DRAMsim3 DRAMsim3 && git -C DRAMsim3
  checkout 2981759``; ``cmake -S DRAMsim3 -B DRAMsim3/build -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_CXX_FLAGS=-O3`` and ``make -C DRAMsim3/build -j N dramsim3``: it leaves
  ``libdramsim3.so`` in the checkout.

``--ramulator2-src`` / ``--dramsim3-src`` clone from elsewhere (a local mirror). A checkout
at another commit is used but named in the output (its speed is not the reference's).

How each is driven, as the reference drove it:

- Ramulator 2: through its Python API, with the reference's configuration (``cases.json``'s
  ``memory_configs`` and ``controller_common``): one script per case, run by this interpreter.
- DRAMsim3: the shipped config with the case's overrides (unified queue where the reference's
  split-queue run deadlocked), through its library API by an in-order trace injector (below,
  compiled here with ``$CXX``/``c++ -O3`` into a temporary folder): each memory cycle it offers
  up to ``transactions_per_cycle`` lines in trace order, stopping at the first refused, then
  ticks.

What is timed, per case and per round (``--repeat`` rounds, the tools alternating in each):

- whole process: ``nmp replay TRACE <memory_args> --json`` (this interpreter's ``nmp``), the
  Ramulator script, the DRAMsim3 injector; each reads the same plain-text trace (Ramulator's
  HBM2 trace has each 64-B line as its two 32-B requests, as in the reference runs). Wall time,
  CPU time (user + system of the process, all its threads: ``wait4``) and the wall time less
  the time the process was runnable but waited for a CPU that other processes held ("wall -
  wait": Linux's ``run_delay`` of its main thread, read from ``/proc/PID/schedstat`` before
  it is reaped; time it waited for a thread of its own counts as blocked, not as this wait):
  on a shared machine, the wall time a free core gives.
- in process: ``replay(requests, spec, drain=False)`` in this process (the trace read before;
  address checks, decoding and statistics included), Ramulator's ``sim.run()``, the injector's
  loop; each stops when the last request is accepted (Ramulator's ``cycles``). Wall time and
  CPU time (the process's, around the call); not wall - wait, which over a loop of 10-20 ms
  was not a measure (the peers' drivers still print their loop's wait, ``wait_s``). nmp's time
  in a round is the mean of ``--in-replays`` replays back to back (default 5): a peer's loop
  lasts 0.1-1 s and so averages the machine's spells within it, where one replay of 5-15 ms
  catches one (on a 2-core VM the same replay moved 2.5-8.5 M requests/s within a second);
  ``--in-replays 1`` gives the single replay earlier versions timed.

Before the timed rounds each tool's whole process runs ``--warmup`` times per case, untimed
(default 1, as hyperfine's ``--warmup``): the first start after a while reads the interpreter,
its modules and the libraries from disk, which is the file cache's state, not the tool's speed.

Printed: each case's best times and its in-process ratio by CPU time; per standard and peer
the ratios (peer time / nmp time: the median over the cases, per round, as the range over the
rounds, and of the best times), each tool's own throughput (requests/s) beside them, and where
each standard's median lies (the case at the median, the speed-up each case below issue 43's
60x would need; and the ratio split into the run's channel-cycles per command, the peer's cost per
channel-cycle and nmp's per command, with the cost per command 60x would need:
``peer_summary.py``); the README's trace (the case
``emb_zipf_a0.8_r1m_rb64_p40@ddr4_1r``) on its own. Where fewer than all of a standard's cases
ran (``--quick``, ``--filter``), its case count reads ``n/N``: a subset's median is not the
standard's (the quick set's two HBM2 cases are among the engine's best against Ramulator 2).
Every peer's cycle count is checked against the reference (and ours against Ramulator's). With
no peer present it says so and prints the recorded speeds (README §10) beside the in-process one
of this engine.

    .venv/bin/python benchmarks/peers.py [--repeat 5] [--filter hbm2] [--quick] [--threads 1]
        [--warmup 1] [--in-replays 5] [--isa avx2] [--peer-dir DIR] [--build [--deps DIR]
        [--jobs N]]

``--isa avx2``: nmp's engine built without AVX-512 (the AVX2 paths an AMD EPYC up to Zen 3 runs,
where issue 43's targets are read), in process and in the ``nmp replay`` children
(``benchmarks/_isa.py``); the peers are built as they are (``-O3``, no ``-march``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _host import load, machine, wait_and_reap  # benchmarks/ is on sys.path when a script runs
from _isa import ISAS, describe, enter
from peer_build import DRAMSIM3, RAMULATOR2, build_peer, built, commit_note, default_peer_dir
from peer_drivers import DRAMSIM3_INJECTOR, RAMULATOR_SCRIPT
from peer_summary import METRICS, in_process_ratio, summarize

from nmp.memory import read_trace, replay
from nmp.reference import case_memory_spec, dram_reference_dir


def child_env() -> dict[str, str]:
    """The environment of a timed process: without ``$PYTHONDONTWRITEBYTECODE`` (a user's Python
    caches bytecode; some sandboxes set it)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


class Ramulator:
    name = "Ramulator2"
    source = RAMULATOR2

    def __init__(self, root: Path, work: Path) -> None:
        self.env = {**child_env(), "PYTHONPATH": str(root / "python")}
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
    source = DRAMSIM3

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
            [*cxx, "-O3", "-std=c++14", f"-I{root / 'src'}", str(src), f"-L{root}", "-ldramsim3"]
            + [f"-Wl,-rpath,{root}", "-o", str(self.binary)],
            check=True,
            capture_output=True,
        )
        self.env = child_env()

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


def find_peers(work: Path, peer_dir: Path) -> tuple[list, list[str]]:
    """The peers built under ``peer_dir`` (or at ``$NMP_RAMULATOR2`` / ``$NMP_DRAMSIM3``)."""
    peers, notes = [], []
    for var, cls in (("NMP_RAMULATOR2", Ramulator), ("NMP_DRAMSIM3", DRAMsim3)):
        root = Path(os.environ.get(var) or peer_dir / cls.source.name)
        if not built(root, cls.source):
            notes.append(f"{cls.name}: no build at {root} (--build, or ${var})")
            continue
        try:
            peers.append(cls(root, work))
            notes.append(f"{cls.name}: {root} {commit_note(root, cls.source)}")
        except (OSError, subprocess.CalledProcessError) as exc:
            notes.append(f"{cls.name}: {root} not usable ({exc})")
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


def timed_process(argv: list[str], env: dict) -> tuple[float, float, float, dict]:
    """Wall time, CPU time (user + system of the process and its threads), the wall time less
    the time it waited for a CPU (:func:`_host.queue_wait_s`, read before it is reaped; the
    wall time where the kernel keeps no such statistics) and the last JSON line it printed."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.DEVNULL)
        status, cpu, wait = wait_and_reap(proc.pid)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, argv)
        out.seek(0)
        last = out.read().decode().strip().splitlines()[-1]
    return wall, cpu, wall - (wait or 0.0), json.loads(last)


def nmp_in_process(requests, spec, replays: int = 1) -> tuple[float, float, int]:
    """Wall and CPU time of a replay in this process (the mean of ``replays`` back to back),
    and its cycles."""
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(replays):
        stats = replay(requests, spec, drain=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return wall / replays, cpu / replays, stats.cycles


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


def measure_case(
    case: dict, config: dict, traces: dict, peers: list, rounds: int, warmup: int, replays: int
) -> dict:
    """Every tool on one case, ``rounds`` times, alternating, after ``warmup`` untimed runs
    of each whole process: its times per round (nmp in process: the mean of ``replays``)."""
    ref = dram_reference_dir()
    spec = case_memory_spec(case["memory_args"])
    requests = read_trace(ref / case["trace"])
    replay(requests, spec, drain=False)  # warm
    row: dict = {"id": case["id"], "config": case["mem_config"], "standard": config["standard"]}
    row["requests"] = case["ramulator2"]["requests"]
    # what the run is made of, for the ratio's factors (peer_summary.ratio_factors): the
    # reference's cycles and commands, which every tool reproduces (the cycles are checked below)
    row["channel_cycles"] = case["ramulator2"]["cycles"] * spec.org.channels
    row["commands"] = sum(case["ramulator2"]["cmd_counts"].values())
    line_path = str(traces[case["trace"], "lines"])
    nmp_argv = [sys.executable, "-m", "nmp", "replay", line_path, *case["memory_args"], "--json"]
    for _ in range(warmup):
        timed_process(nmp_argv, child_env())
        for peer in peers:
            argv = peer.argv(case, traces, config)
            if argv is not None:
                timed_process(argv, peer.env)
    for _ in range(rounds):
        wall, cpu, free, out = timed_process(nmp_argv, child_env())
        t_in, c_in, cycles = nmp_in_process(requests, spec, replays)
        assert out["cycles"] == cycles == case["ramulator2"]["cycles"], case["id"]
        _add(row, "nmp", (wall, cpu, free, t_in, c_in))
        for peer in peers:
            argv = peer.argv(case, traces, config)
            if argv is None:
                continue
            wall, cpu, free, out = timed_process(argv, peer.env)
            got = out.get("cycles", out.get("cycles_accept"))
            if got != peer.expected(case):
                print(f"  {peer.name} {case['id']}: {got} cycles, recorded {peer.expected(case)}")
            _add(row, peer.name, (wall, cpu, free, out["run_s"], out["cpu_s"]))
    return row


def _add(row: dict, tool: str, times: tuple[float, ...]) -> None:
    into = row.setdefault(tool, {m: [] for m in METRICS})
    for metric, t in zip(METRICS, times, strict=True):
        into[metric].append(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="rounds per case (a range over them)")
    ap.add_argument(
        "--warmup", type=int, default=1, help="untimed whole-process runs per tool and case first"
    )
    ap.add_argument(
        "--in-replays", type=int, default=5, help="nmp's replays per round in process (the mean)"
    )
    ap.add_argument("--filter", default="", help="only cases whose id contains this")
    ap.add_argument("--quick", action="store_true", help="every fourth case only")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="nmp's threads per multi-channel replay (1: one core)",
    )
    ap.add_argument(
        "--isa",
        choices=ISAS,
        default="native",
        help="avx2: nmp's engine built without AVX-512, as on an AMD EPYC up to Zen 3 (_isa.py)",
    )
    ap.add_argument("--peer-dir", type=Path, default=default_peer_dir(), help="the peers' builds")
    ap.add_argument("--build", action="store_true", help="clone and build the peers first")
    ap.add_argument("--deps", type=Path, help="local yaml-cpp, fmt, nanobind for Ramulator's build")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="make -j for --build")
    ap.add_argument("--ramulator2-src", default=RAMULATOR2.url, help="where to clone Ramulator 2")
    ap.add_argument("--dramsim3-src", default=DRAMSIM3.url, help="where to clone DRAMsim3")
    a = ap.parse_args()
    if a.repeat < 1 or a.warmup < 0 or a.in_replays < 1:
        ap.error("--repeat and --in-replays must be at least 1, --warmup at least 0")
    enter(a.isa)
    if a.build:
        for peer, src in ((RAMULATOR2, a.ramulator2_src), (DRAMSIM3, a.dramsim3_src)):
            print(f"building {peer.name} @{peer.commit} into {a.peer_dir}")
            build_peer(peer, a.peer_dir, src, a.jobs, a.deps)
    os.environ["NMP_ENGINE_THREADS"] = str(a.threads)  # (this process and nmp replay's)
    ref = dram_reference_dir()
    data = json.loads((ref / "cases.json").read_text())
    cases = [c for c in data["cases"] if a.filter in c["id"]]
    if a.quick:
        cases = cases[::4]
    print(f"machine: {machine()}; load average (1/5/15 min) before: {load()}")
    print(f"nmp: {a.threads} thread(s) per multi-channel replay; the peers run on one")
    print(f"nmp: {describe()}")
    print(
        f"each whole process run {a.warmup} time(s) per case untimed first; nmp in process: "
        f"the mean of {a.in_replays} replay(s) per round"
    )
    with tempfile.TemporaryDirectory(prefix="nmp-peers-") as tmp:
        work = Path(tmp)
        peers, notes = find_peers(work, a.peer_dir)
        for note in notes:
            print(f"peer {note}")
        if not peers:
            recorded(cases, ref)
            print(f"load average after: {load()}")
            return
        traces = plain_traces(cases, ref, work)
        rows = []
        print(
            f"\n{'case':46s} {'requests':>8s} {'nmp whole/in s':>15s}"
            + "".join(f" {p.name + ' whole/in s':>22s}" for p in peers)
            + "   (best wall times); in process by CPU, peer / nmp"
        )
        for case in cases:
            cfg = data["memory_configs"][case["mem_config"]]
            config = {**cfg, "controller_common": data["controller_common"]}
            row = measure_case(case, config, traces, peers, a.repeat, a.warmup, a.in_replays)
            rows.append(row)
            cells = "".join(
                f" {min(row[p.name]['whole_wall']):10.3f}/{min(row[p.name]['in_wall']):<11.4f}"
                if p.name in row
                else f" {'-':>22s}"
                for p in peers
            )
            ratios = "".join(
                f" {in_process_ratio(row, p.name):6.1f}x" if p.name in row else f" {'-':>7s}"
                for p in peers
            )
            print(
                f"{case['id']:46s} {row['requests']:8d} {min(row['nmp']['whole_wall']):6.3f}/"
                f"{min(row['nmp']['in_wall']):<8.4f}{cells}  {ratios}",
                flush=True,
            )
        print(f"load average after: {load()}")
        totals = Counter(data["memory_configs"][c["mem_config"]]["standard"] for c in data["cases"])
        summarize(rows, peers, a.repeat, totals)


if __name__ == "__main__":
    main()
