"""Summed runs, two engine libraries side by side: a library with ``simulate_sum_c`` (the read
sums kept as requests retire) against one without it (``simulate_c`` then ``read_sums_c``, as
``native.simulate_summary`` called them before), on exactly the same captured arguments.

Captured in this process: ``replay(requests, spec, drain=False)`` of the quick reference cases
(``peers.py --quick``'s: every fourth), and the ``simulate_many_c`` calls of ``--points`` design
points (``run_design_point("recross", "recross-eval")``, seeds 11.., one thread: 18 runs a
point). Each call then runs on each library, the order alternating from round to round, timed
by this process's CPU time, best of ``--rounds`` per call; the outputs (status, cycles,
counters, active cycles, the sums; not the count of evaluations, which main's ``read_sums_c``
path also leaves alone) must be equal, or the script exits non-zero. Give one library twice
(two copies of the file) for the method's own spread. Engine alone: no Python around it.

    python benchmarks/summary_ab.py OLD.so NEW.so [--rounds 11] [--points 6]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time
from types import SimpleNamespace

os.environ["NMP_THREADS"] = "1"  # a design point's runs in simulate_many_c calls

import numpy as np
from _host import load, machine  # benchmarks/ is on sys.path when a script runs

import nmp.memory.native as native
from nmp.arch import run_design_point
from nmp.memory import read_trace, replay
from nmp.memory.counters import N_COUNTERS
from nmp.memory.engine_fields import EngineArgs
from nmp.reference import case_memory_spec, dram_reference_dir

_P, _I = ctypes.c_void_p, ctypes.c_int64
_SMALL = 4 + 2 * N_COUNTERS  # scalars and counters, then active cycles, then the sums


def _library(path: str):
    lib = ctypes.CDLL(os.path.abspath(path))
    lib.simulate_c.restype = ctypes.c_int
    lib.simulate_c.argtypes = [ctypes.POINTER(EngineArgs)]
    lib.simulate_many_c.restype = ctypes.c_int
    lib.simulate_many_c.argtypes = [_P, _I, _I, _P]
    lib.read_sums_c.restype = None
    lib.read_sums_c.argtypes = [_P, _I, _P, _P, _P, _I, _I, _P]
    summed = hasattr(lib, "simulate_sum_c")
    if summed:
        lib.simulate_sum_c.restype = ctypes.c_int
        lib.simulate_sum_c.argtypes = [ctypes.POINTER(EngineArgs), _P]
    return SimpleNamespace(c=lib, summed=summed)


def _capture(points: int) -> tuple[list, list]:
    """(replays: (case id, args, its own output buffer, ranks, has_write, ks, arrays kept),
    design-point calls: (arguments, arrays kept))."""
    seen: list = []
    original = native._interruptible

    def spy(n, keep, fn, *args):
        seen.append((fn.__name__, keep, args))
        return original(n, keep, fn, *args)

    native._interruptible = spy
    try:
        ref = dram_reference_dir()
        replays = []
        for case in json.loads((ref / "cases.json").read_text())["cases"][::4]:
            spec = case_memory_spec(case["memory_args"])
            requests = read_trace(ref / case["trace"])
            seen.clear()
            replay(requests, spec, drain=False)
            _, keep, args = seen[-1]
            a = EngineArgs.from_buffer_copy(args[0]._obj)
            # the lines lie in this thread's split buffers, which the next case overwrites
            lines = [np.array(x, copy=True) for x in keep[:3]]
            a.addr, a.line_wr, a.line_arr = (x.ctypes.data for x in lines)
            out = np.zeros(_SMALL + 256 + 5, np.int64)
            a.out_scalars, a.cnt_snap = out.ctypes.data, out.ctypes.data + 32
            a.cnt = out.ctypes.data + 8 * (4 + N_COUNTERS)
            a.active_cycles = out.ctypes.data + 8 * _SMALL
            ranks = spec.org.channels * spec.org.ranks
            ks = int(keep[3][0])
            has_write = bool(requests["write"].any())
            replays.append((case["id"], a, out, ranks, has_write, ks, (keep, lines)))
        run_design_point("recross", "recross-eval", seed=0)  # (compilation, profile, LP)
        seen.clear()
        for s in range(11, 11 + points):
            run_design_point("recross", "recross-eval", seed=s)
        many = [(args, keep) for name, keep, args in seen if name == "simulate_many_c"]
        return replays, many
    finally:
        native._interruptible = original


def _replay_once(lib, r) -> int:
    _, a, out, ranks, has_write, ks, _ = r
    sums = out.ctypes.data + 8 * (_SMALL + ranks)
    if lib.summed:
        return lib.c.simulate_sum_c(ctypes.byref(a), sums)
    rc = lib.c.simulate_c(ctypes.byref(a))
    done = a.done if has_write else a.depart  # (main's simulate_summary: reads' done = depart)
    wr = a.line_wr if has_write else None
    lib.c.read_sums_c(wr, ks, a.arrive, a.depart, done, a.n, int(out[1]), sums)
    return rc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("libs", nargs=2, help="engine libraries (.so): old, new")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--points", type=int, default=6)
    a = ap.parse_args()
    libs = [_library(p) for p in a.libs]
    print(f"machine: {machine()}; load average (1/5/15 min): {load()}")
    replays, many = _capture(a.points)
    runs = sum(args[1] for args, _ in many)
    best: dict = {}
    bad = set()
    for rnd in range(a.rounds):
        order = (0, 1) if rnd % 2 == 0 else (1, 0)
        for r in replays:
            outs = {}
            for i in order:
                t0 = time.process_time()
                rc = _replay_once(libs[i], r)
                t = time.process_time() - t0
                best[i, r[0]] = min(best.get((i, r[0]), 1e9), t)
                if rc != 0:
                    sys.exit(f"{a.libs[i]}: {rc} on {r[0]}")
                o = r[2][: _SMALL + r[3] + 5].copy()
                o[3] = 0  # (the count of evaluations)
                outs[i] = o
            if not np.array_equal(outs[0], outs[1]):
                bad.add(r[0])
        for k, (args, keep) in enumerate(many):
            outs = {}
            for i in order:
                t0 = time.process_time()
                rc = libs[i].c.simulate_many_c(*args)
                best[i, k] = min(best.get((i, k), 1e9), time.process_time() - t0)
                if rc != 0:
                    sys.exit(f"{a.libs[i]}: simulate_many_c returned {rc}")
                small, sums = keep[1].copy(), keep[2].copy()
                small[:, 3] = 0
                outs[i] = (small, sums)
            if any(not np.array_equal(x, y) for x, y in zip(outs[0], outs[1], strict=True)):
                bad.add(f"design-point call {k}")
    print(f"{'case (replay, drain=False)':46s} {'old us':>9s} {'new us':>9s}  old/new")
    per_std: dict[str, list[float]] = {}
    for r in replays:
        old, new = best[0, r[0]], best[1, r[0]]
        per_std.setdefault(r[0].split("@")[1], []).append(old / new)
        print(f"{r[0]:46s} {old * 1e6:9.0f} {new * 1e6:9.0f}  {old / new:.3f}")
    for std, v in per_std.items():
        print(f"  {std}: median {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})")
    ratios = [x for v in per_std.values() for x in v]
    print(f"  all {len(ratios)}: median {statistics.median(ratios):.3f}")
    old = sum(best[0, k] for k in range(len(many)))
    new = sum(best[1, k] for k in range(len(many)))
    per_call = sorted(best[0, k] / best[1, k] for k in range(len(many)))
    print(
        f"design points: {runs} runs in {len(many)} calls, the sum of each call's least: "
        f"old {old * 1e3:.1f} ms, new {new * 1e3:.1f} ms, {old / new:.3f}x ({old / runs * 1e3:.3f}"
        f" -> {new / runs * 1e3:.3f} ms a run); per call median {statistics.median(per_call):.3f}x"
    )
    if bad:
        sys.exit(f"outputs differ: {sorted(bad)}")
    print("outputs equal")


if __name__ == "__main__":
    main()
