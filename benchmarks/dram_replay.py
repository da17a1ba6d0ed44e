"""DRAM engine speed on the reference traces, beside Ramulator 2's recorded speed.

For every case of ``data/reference/dram/cases.json`` (located by :mod:`nmp.reference`): the
trace is read first; the timed part is ``replay(requests, spec, drain=False)`` (address
decoding included: the C engine decodes the lines itself), which stops where Ramulator's
``sim.run()`` stops (last request accepted), best of ``--repeat`` runs after one warm-up run
that also compiles the engine, timed in CPU time of this process
(``time.process_time``: the figure does not depend on other load on a shared machine; on an idle
machine wall time is the same). Requests are Ramulator's (HBM2: 32-B halves). Prints requests/s
of both and the ratio, then the median and overall figures. Where the time goes: ``evals/req``
is the work the engine did per request -- channel-controller evaluations (native) or memory
cycles visited (numba); the cycles it skips cost nothing -- and ``cmds/req`` the DRAM commands
it issued per request.

``--engine`` picks the build (``$NMP_ENGINE``): ``native`` (C, the default when a compiler is
there) or ``numba`` (the reference); their results are identical. ``--threads N`` runs the
channels of a multi-channel replay on up to N threads (``$NMP_ENGINE_THREADS``; default 1:
the engine on one core, as the ratios to Ramulator are stated); with more than one the timing
is in wall time (CPU time would add the threads up).

    python benchmarks/dram_replay.py [--repeat 3] [--filter ddr4] [--engine numba] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from nmp.memory import read_trace, replay
from nmp.memory.driver import ENGINES, engine_backend, run_engine
from nmp.reference import case_memory_spec, dram_reference_dir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--filter", default="", help="only cases whose id contains this")
    ap.add_argument("--engine", choices=ENGINES, default=None, help="default: $NMP_ENGINE or auto")
    ap.add_argument("--threads", type=int, default=1, help="threads per multi-channel replay (1)")
    a = ap.parse_args()
    if a.engine:
        os.environ["NMP_ENGINE"] = a.engine
    os.environ["NMP_ENGINE_THREADS"] = str(a.threads)
    clock = time.perf_counter if a.threads > 1 else time.process_time
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"engine: {engine_backend()}; threads: {a.threads}; "
        f"{os.cpu_count()} cores, load average {load}"
    )
    ref = dram_reference_dir()
    cases = [
        c for c in json.loads((ref / "cases.json").read_text())["cases"] if a.filter in c["id"]
    ]
    print(
        f"{'case':46s} {'requests':>9s} {'engine req/s':>13s} {'Ramulator2':>11s} {'ratio':>7s}"
        f" {'evals/req':>9s} {'cmds/req':>8s}"
    )
    ratios, total_req, total_s, total_ram_s, total_evals, total_cmds = [], 0, 0.0, 0.0, 0, 0
    for case in cases:
        spec = case_memory_spec(case["memory_args"])
        requests = read_trace(ref / case["trace"])
        stats = replay(requests, spec, drain=False)  # warm-up (and compile on the first case)
        assert stats.cycles == case["ramulator2"]["cycles"], case["id"]
        best = float("inf")
        for _ in range(a.repeat):
            t0 = clock()
            replay(requests, spec, drain=False)
            best = min(best, clock() - t0)
        n = stats.requests
        lines = (requests["addr"], requests["write"], None)
        out = run_engine(lines, spec, drain=False)  # untimed: counts
        evals, cmds = int(out[10]), sum(stats.cmd_counts[k] for k in ("ACT", "PRE", "RD", "WR"))
        total_evals += evals
        total_cmds += cmds
        rate = n / best
        ram = case["ramulator2"]["requests_per_s"]
        ratios.append(rate / ram)
        total_req += n
        total_s += best
        total_ram_s += case["ramulator2"]["wall_s"]
        print(
            f"{case['id']:46s} {n:9d} {rate:13,.0f} {ram:11,.0f} {rate / ram:7.1f}x"
            f" {evals / n:9.2f} {cmds / n:8.2f}"
        )
    if not ratios:
        print("no case selected")
        return
    print(
        f"\n{len(ratios)} cases: median ratio {statistics.median(ratios):.1f}x "
        f"(min {min(ratios):.1f}x, max {max(ratios):.1f}x); overall {total_req / total_s:,.0f} "
        f"requests/s against Ramulator 2's {total_req / total_ram_s:,.0f} "
        f"({total_ram_s / total_s:.1f}x)"
    )
    print(
        f"per request: {total_evals / total_req:.2f} evaluations, "
        f"{total_cmds / total_req:.2f} commands; {1e9 * total_s / total_evals:.0f} ns per "
        f"evaluation"
    )


if __name__ == "__main__":
    main()
